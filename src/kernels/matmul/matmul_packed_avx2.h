// Packed Q4_0 and Q6_K weights (weight_pack.h: 16-row groups, a 64-byte line = 16 rows × 4
// codes) on AVX2 without VNNI: the decode, verification and prompt products of CPUs that have neither
// AVX-512 nor AMX (AMD Zen 2/3, older Intel cores).
//
// Why packed: the ggml-layout row kernels (matmul_avx2.h) finish every 32-element block of
// every row and column with a horizontal sum (~7 operations for 32 products). In the 16-row
// interleave lane o of a register is row o, so one 256-bit register holds the partial sums
// of 8 rows and no horizontal sum is needed; the unpacked codes of a block are shared by
// every token of the call (1 + 3 for a verification, chunks of 4 for a prompt).
//
// Per block, half-group (8 rows) and token: VPMADDUBSW multiplies 8 rows × 4 unsigned codes
// (0..15) by the token's 4 codes broadcast; the 8 results of a block are added in int16
// (|Σ| <= 8 · 2 · 15 · 127 = 30480 < 32768: exact), VPMADDWD by ones makes the int32 sum of
// the row's 32 products, and the block's −8 · Σa (the codes' offset, precomputed per token)
// makes it the integer block sum s = Σ (q − 8) · a of ggml's vec_dot. Then, as every other
// Q4_0 path here: y += float(s) · (d_w · d_a), one FMA per block in block order; the result
// equals the ggml-row kernels' and the AVX-512 path's bit for bit.
//
// This translation unit is compiled with -mavx2 -mfma -mf16c; callable only on such CPUs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels::avx2 {

// Per token, the terms of its nb Q8_0 blocks the packed Q4_0 kernel needs: sums[b · stride] =
// −8 · Σ qs and scales[b · stride] = d as float (F16C). With stride T and the pointers at token
// t's column, the T tokens' terms are block-major: what the kernel walks.
void q4_0_packed_terms(const BlockQ8_0* a, int64_t nb, int64_t stride, int32_t* sums, float* scales);

// Packed rows [0, nr) (`packed` at the first row's 16-row group, groups `group_bytes` apart)
// times T token rows: token t's Q8_0 blocks at act + t · act_row, its block b's terms at
// sums[b · T + t] and scales[b · T + t]. Y[t · ldy + r] for r < nr.
void gemm_packed_q4_0(const uint8_t* packed, size_t group_bytes, int64_t n, int64_t nr, const uint8_t* act,
                      size_t act_row, const int32_t* sums, const float* scales, int64_t T, float* y, int64_t ldy);

// Packed Q6_K (weight_pack.h) against T Q8_K rows (token t's at act + t · act_row), the same
// way; the codes' offset (value = code − 32) comes from the rows' own bsums. The integer
// super-block sums and the FMA per super-block are the AVX-512 packed Q6_K kernel's
// (matmul_kquant_vnni.h): the same bits.
void gemm_packed_q6_K(const uint8_t* packed, size_t group_bytes, int64_t n, int64_t nr, const uint8_t* act,
                      size_t act_row, int64_t T, float* y, int64_t ldy);

}  // namespace tandem::kernels::avx2
