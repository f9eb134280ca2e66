// Arm64 row kernels (row_kernels.h), one table per tier, each in its own translation unit compiled
// for that tier only (CMakeLists.txt): neon (Armv8.0 Advanced SIMD: every Arm64 core), dotprod
// (+SDOT, Armv8.2), i8mm (+SMMLA, Armv8.6), against activation rows in ggml's layout for the
// weight's vec_dot_type (block_q8_0 rows for Q4_0 / Q8_0, block_q8_K for the K-quants, F32 for
// F32, F16 for F16).
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

#include "gguf/quants.h"
#include "kernels/matmul/row_kernels.h"

namespace tandem::kernels {

// Q4_0 / Q8_0 on SMULL + SADALP; the K-quants against block_q8_K with the integer sums exact and
// the float step vec_dot_ref's own, so every Arm tier gives the reference's bits there
// (matmul_neon_body.h); F32 weights and activations, F16 weights with activations already rounded
// to F16 (as ggml does): four lanes × four accumulators per column, fused multiply-adds, then the
// lanes' sum.
namespace neon {
extern const RowKernels<const BlockQ8_0*> kRowKernels;
}

// Q4_0 / Q8_0 and the K-quants on SDOT (the same body as neon's); floats: neon's.
namespace dotprod {
extern const RowKernels<const BlockQ8_0*> kRowKernels;
}

// Q4_0 / Q8_0, two weight rows × two columns per SMMLA (the 2×8 by 8×2 int8 block product):
// columns in pairs (an odd last column paired with itself), rows in pairs (an odd last row with
// itself). The other types: dotprod's (RowKernels::or_else).
namespace i8mm {
extern const RowKernels<const BlockQ8_0*> kRowKernels;
}

}  // namespace tandem::kernels
