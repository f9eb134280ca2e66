// AVX2 (+FMA, F16C) row kernels, for CPUs without AVX-512. Each computes, for weight
// rows [r0, r1) and nc <= 8 activation columns, Y[c*ldy + r] = W[r] . act[c], where
// act[c] is an activation row in ggml's layout for the weight's vec_dot_type (what
// quantize_activation writes: block_q8_0 rows for Q4_0/Q8_0, block_q8_K rows for
// Q4_K/Q5_K/Q6_K, F32 for F32, F16 for F16). Every weight block is loaded and unpacked once
// and applied to all nc columns before moving on; a column's accumulation order does not
// depend on nc, so each column of a multi-column product equals its single-column product
// bit for bit.
//
// The integer block sums follow ggml's AVX2 vec_dot (_mm256_maddubs_epi16 on unsigned x
// signed bytes, the sign trick for signed weights, _mm256_madd_epi16 to int32) and are
// exact; only the float accumulation order differs from vec_dot_ref.
//
// Only callable when cpu_features() reports AVX2, FMA and F16C; this translation unit is
// compiled with those instruction sets and holds nothing else (no inline library code
// that another unit could pick up).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels::avx2 {

constexpr int kMaxCols = 8;

void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
// Q5_0 against block_q8_0, Q4_1 / Q5_1 against block_q8_1 (also used on the AVX-512 tiers).
void rows_q5_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q4_1(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_1* const* a, int nc,
               float* y, int64_t ldy);
void rows_q5_1(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_1* const* a, int nc,
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

}  // namespace tandem::kernels::avx2
