// AVX-512 (F, BW, VL, VNNI) row kernels. Each computes, for weight rows [r0, r1) and
// nc <= 8 activation columns, Y[c*ldy + r] = W[r] . act[c]. Every weight block is
// loaded and unpacked once and applied to all nc columns before moving on (the
// column-shared product used for speculative verification; nc = 1 is the decode GEMV,
// and the GEMM path calls these per group of 8 columns).
//
// Only callable when cpu_features() reports AVX-512 VNNI; this translation unit is
// compiled with those instruction sets and holds nothing else (no inline library code
// that another unit could pick up).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/quants.h"
#include "kernels/activation_quant/packed_activations.h"

namespace tandem::kernels::avx512 {

constexpr int kMaxCols = 8;

void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const Q8PairsView* a, int nc,
               float* y, int64_t ldy);
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const Q8PairsView* a, int nc,
               float* y, int64_t ldy);
void rows_q4_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a,
               int nc, float* y, int64_t ldy);
void rows_q5_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a,
               int nc, float* y, int64_t ldy);
void rows_q6_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a,
               int nc, float* y, int64_t ldy);
void rows_f32(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const float* const* a, int nc,
              float* y, int64_t ldy);
// F16 weights; activations already rounded to F16 (as ggml does).
void rows_f16(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const uint16_t* const* a, int nc,
              float* y, int64_t ldy);

}  // namespace tandem::kernels::avx512
