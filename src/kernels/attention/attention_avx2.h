// AVX2 body of attention_rows (attention_avx2.cpp, compiled with -mavx2 -mfma), for CPUs without
// AVX-512. Query rows go in blocks of 4 that share each K and V row load; every row's scores,
// softmax and weighted V sum are its own chains in a fixed order, so a row's result does not
// depend on the rows it is grouped with (a 1+3 verification reproduces decode steps bit for
// bit). Scores are float FMA chains (two per row, over alternate 8-float chunks), then the
// reference's softmax (expf, a double sum) and its V sum order (position by position).
// Call only after attention.cpp's dispatch has checked the tier, and only for head_dim a
// multiple of 16.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx2 {

// scores: n × max(n_kv) floats of scratch.
void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int head_dim, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores);

}  // namespace tandem::kernels::avx2
