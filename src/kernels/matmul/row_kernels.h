// The row kernels every vector instruction set provides for matmul (matmul.cpp), described once:
// for weight rows [r0, r1) of ggml blocks and nc <= kMaxRowCols activation columns,
// Y[c*ldy + r] = W[r] . act[c], where act[c] is a column's activation row as the weight's
// vec_dot_type (what quantize_activation writes: block_q8_0 rows for Q4_0 / Q8_0 / Q5_0,
// block_q8_1 for Q4_1 / Q5_1, block_q8_K for the K-quants, F32 for F32, F16 for F16), or the
// ISA's own repacking of it. Every weight block is loaded and unpacked once and applied to all nc
// columns before the next; a column's accumulation order does not depend on nc, so each column of
// a multi-column product equals its one-column product bit for bit.
//
// Each ISA exports one RowKernels table (avx2::, avx512::, neon::, dotprod::, i8mm::, and the next
// one beside them), null where it has no kernel for a type; matmul.cpp picks the table from the
// product's MatmulPath and the entry from the weight type. A table is data only: the functions it
// points to are internal to the ISA's translation unit, compiled for that ISA alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels {

constexpr int kMaxRowCols = 8;  // activation columns per row-kernel call (the column group)

// Column is what one activation column is passed as: a pointer to its ggml blocks, or a view of
// an ISA's repacked row (avx512: Q8PairsView).
template <typename Column>
using RowKernelFn = void (*)(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const Column* a,
                             int nc, float* y, int64_t ldy);

// Q8_0Column: the columns Q4_0 and Q8_0 weights meet (the ggml block_q8_0 rows, or a repacking).
template <typename Q8_0Column>
struct RowKernels {
  RowKernelFn<Q8_0Column> q4_0 = nullptr, q8_0 = nullptr;
  RowKernelFn<const BlockQ8_0*> q5_0 = nullptr;
  RowKernelFn<const BlockQ8_1*> q4_1 = nullptr, q5_1 = nullptr;
  RowKernelFn<const BlockQ8_K*> q4_K = nullptr, q5_K = nullptr, q6_K = nullptr;
  RowKernelFn<const float*> f32 = nullptr;
  RowKernelFn<const uint16_t*> f16 = nullptr;  // F16 weights; activations already rounded to F16 (as ggml)

  // These kernels, and below's for the types these have none of: a tier that adds instructions
  // for a few types (Arm's dotprod and i8mm) runs the lower tier's kernels for the rest.
  RowKernels or_else(const RowKernels& below) const {
    RowKernels k = *this;
    if (!k.q4_0) k.q4_0 = below.q4_0;
    if (!k.q8_0) k.q8_0 = below.q8_0;
    if (!k.q5_0) k.q5_0 = below.q5_0;
    if (!k.q4_1) k.q4_1 = below.q4_1;
    if (!k.q5_1) k.q5_1 = below.q5_1;
    if (!k.q4_K) k.q4_K = below.q4_K;
    if (!k.q5_K) k.q5_K = below.q5_K;
    if (!k.q6_K) k.q6_K = below.q6_K;
    if (!k.f32) k.f32 = below.f32;
    if (!k.f16) k.f16 = below.f16;
    return k;
  }
};

}  // namespace tandem::kernels
