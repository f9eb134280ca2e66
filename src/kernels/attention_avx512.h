// AVX-512 causal attention (same semantics as attention_causal_ref); head_dim must be
// a multiple of 16. Only callable when the CPU has AVX-512 (see attention.cpp).
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// scores: scratch of at least pos0 + T floats.
void attention_causal(int n_head, int n_head_kv, int head_dim, int64_t T, int64_t pos0, float scale, const float* q,
                      int64_t ldq, const float* k_cache, const float* v_cache, int64_t kv_stride, float* out,
                      int64_t ldo, float* scores);

// Grouped rows (kernels/attention.h, AttentionRows); scores: n × max(n_kv) floats.
void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores);

}  // namespace tandem::kernels::avx512
