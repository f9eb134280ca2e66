// Arm64 row kernels, one namespace per tier, each in its own translation unit compiled for that
// tier only (CMakeLists.txt): neon (Armv8.0 Advanced SIMD: every Arm64 core), dotprod (+SDOT,
// Armv8.2), i8mm (+SMMLA, Armv8.6). Same contract as the AVX2 row kernels (matmul_avx2.h): for
// weight rows [r0, r1) and nc <= kMaxCols activation columns, Y[c*ldy + r] = W[r] . act[c], where
// act[c] is an activation row in ggml's layout for the weight's vec_dot_type (block_q8_0 rows for
// Q4_0 / Q8_0, F32 for F32, F16 for F16); each weight block is loaded and unpacked once and
// applied to all nc columns.
//
// Integer schemes: ggml's (activations converted to Q8_0 as ggml-cpu does), so the block sums are
// exact. The float side is the same on all three tiers, per (row, column) and block in order:
// acc = fma(float(block sum), d_w * d_a, acc), then the row's sum. So neon, dotprod and i8mm give
// the same bits (tested), a column of a multi-column product equals its one-column product, and a
// model answers bit for bit alike on every Arm tier; only the float order differs from
// vec_dot_ref (the scalar reference, which does (sum * d_w) * d_a then +).
//
// Instruction mix per 32-weight block and column (what decides speed on a device; not measured
// here): neon Q8_0 4 SMULL/SMULL2 + 4 SADALP; dotprod Q8_0 2 SDOT; i8mm 4 SMMLA per block of 2
// rows × 2 columns (32 products each, no horizontal sum); Q4_0 adds the nibble unpack (AND,
// USHR, SUB) once per block, shared by the columns; K-quants per 256-weight super-block and
// column 16 SDOT (or 32 SMULL + 32 SADALP) and 8 or 16 MLA by the sub-block scales
// (docs/arm64.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels {

namespace neon {
constexpr int kMaxCols = 8;
void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
// K-quants against block_q8_K: the integer sums exact, the float step vec_dot_ref's own, so
// every Arm tier gives the reference's bits (matmul_neon_body.h). i8mm runs dotprod's.
void rows_q4_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
void rows_q5_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
void rows_q6_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
// F32 weights and activations; F16 weights with activations already rounded to F16 (as ggml
// does). Four lanes × four accumulators per column, fused multiply-adds, then the lanes' sum.
void rows_f32(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const float* const* a, int nc,
              float* y, int64_t ldy);
void rows_f16(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const uint16_t* const* a, int nc,
              float* y, int64_t ldy);
}  // namespace neon

namespace dotprod {
void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q4_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
void rows_q5_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
void rows_q6_K(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
               float* y, int64_t ldy);
}  // namespace dotprod

// Two weight rows × two columns per SMMLA (the 2×8 by 8×2 int8 block product): columns in pairs
// (an odd last column paired with itself), rows in pairs (an odd last row with itself).
namespace i8mm {
void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy);
}  // namespace i8mm

}  // namespace tandem::kernels
