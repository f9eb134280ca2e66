// AVX-512 attention over grouped query rows (semantics of attention_rows_ref); head_dim must
// be a multiple of 16. Only callable when the CPU has AVX-512 (see attention.cpp).
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// Grouped rows (kernels/attention.h, AttentionRows); scores: n × max(n_kv) floats.
void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores);

}  // namespace tandem::kernels::avx512
