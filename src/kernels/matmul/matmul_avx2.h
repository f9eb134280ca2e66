// AVX2 (+FMA, F16C) row kernels (row_kernels.h), for CPUs without AVX-512, against activation
// rows in ggml's layout for the weight's vec_dot_type. Q4_0 / Q8_0 / Q5_0 meet block_q8_0 rows,
// Q4_1 / Q5_1 block_q8_1 (these three legacy types run here on the AVX-512 tiers too).
//
// The integer block sums follow ggml's AVX2 vec_dot (_mm256_maddubs_epi16 on unsigned x
// signed bytes, the sign trick for signed weights, _mm256_madd_epi16 to int32) and are
// exact; only the float accumulation order differs from vec_dot_ref.
//
// Only callable when cpu_features() reports AVX2, FMA and F16C; this translation unit is
// compiled with those instruction sets and holds nothing else (no inline library code
// that another unit could pick up).
#pragma once

#include "gguf/quants.h"
#include "kernels/matmul/row_kernels.h"

namespace tandem::kernels::avx2 {

extern const RowKernels<const BlockQ8_0*> kRowKernels;

}  // namespace tandem::kernels::avx2
