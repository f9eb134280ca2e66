// AVX-512 (F, BW, VL, VNNI) row kernels (row_kernels.h): the column-shared product used for
// speculative verification; nc = 1 is the decode GEMV, and the GEMM path calls these per group of
// 8 columns.
//
// Only callable when cpu_features() reports AVX-512 VNNI; this translation unit is
// compiled with those instruction sets and holds nothing else (no inline library code
// that another unit could pick up).
#pragma once

#include "gguf/quants.h"
#include "kernels/activation_quant/packed_activations.h"
#include "kernels/matmul/row_kernels.h"

namespace tandem::kernels::avx512 {

// Q4_0 / Q8_0 against packed activation pairs (packed_activations.h), the others against ggml's rows
// (K-quants: block_q8_K; F32; F16). No legacy Q5_0 / Q4_1 / Q5_1: the AVX2 ones run them.
extern const RowKernels<Q8PairsView> kRowKernels;

}  // namespace tandem::kernels::avx512
