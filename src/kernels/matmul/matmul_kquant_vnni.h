// The packed K-quant products on the AVX-512 vector units (matmul_q4k_vnni.cpp: Q4_K and Q5_K;
// matmul_q6k_vnni.cpp: Q6_K), over the 16-row interleaves made at load (weight_pack.h) and the
// loop of packed_groups_avx512.h.
//
// Q4_K (and Q5_K) weights × Q8_K activations on AVX-512 VNNI, from the 16-row interleave made
// at load (weight_pack.h). Q4_K is the bulk of a Q4_K_M file (the quantization users download
// most), so its decode steps and verification passes stream these groups.
//
// Why a packed form: the ggml-row kernel (matmul_avx512.cpp, Q4_KRow) unpacks each row's
// codes and 6-bit scales for itself and reduces a 16-lane sum per token and row; four tokens
// cost it 1.6-1.7x one token, while the memory gives a four-token pass little more time than a
// one-token one. With 16 rows interleaved, one VPDPBUSD multiplies 16 rows × 4 codes by 4
// broadcast activation bytes, the unpacking (a mask, a shift and a mask per line) and the
// scales' widening are shared by the tokens, and lane o of every register stays row o.
//
// The arithmetic is ggml's: per 32-element sub-block j the integer sum of code × activation,
// times the row's 6-bit scale (one VPDPWSSD each: packed_groups_avx512.h, add_scaled), summed
// over the super-block in int32; the mins term Σ_j m_j · (the sub-block's activation sum) in
// int32 too (VPDPWSSD on pairs of sub-blocks); then, per super-block,
// isum × (d_w · d_a) − minsum × (dmin_w · d_a) in float. Every (token, row) output takes the
// same operations in the same order whatever T, so a column is bit for bit its one-token product.
//
// Q6_K weights × Q8_K activations on AVX-512 VNNI, from the 16-row interleave made at load
// (weight_pack.h). The output head of the Q4_0 models is Q6_K: 150k rows read once per
// decode step and once per verification pass, its single largest matrix.
//
// Why a packed form: the ggml-row kernel (matmul_avx512.cpp, Q6_KRow) unpacks every row's
// 6-bit codes for itself and then, per token, reduces a 16-lane sum to one output; a
// 1+3-token pass spends ~90 vector operations per row and super-block, more than the memory
// gives it time for. With 16 rows interleaved, one VPDPBUSD multiplies 16 rows × 4 codes by
// 4 broadcast activation bytes, the unpacking (two masks and a shift per line) is shared by
// the tokens and lane o of every register stays row o: no horizontal sums at all.
//
// The arithmetic: per 16-element sub-block j, the integer sum of code × activation starts
// from −32 · bsum_j (the codes are the values plus 32; Q8_K keeps each 16 activations' sum),
// is multiplied by the row's int8 scale (one VPDPWSSD: packed_groups_avx512.h, add_scaled)
// and summed over the super-block in int32, exactly the integer ggml's dot product forms;
// then, per super-block, one float FMA adds isum × (d_w · d_a). Every (token, row) output takes
// the same operations in the same order whatever T, so a column is bit for bit its one-token
// product.
//
// Compiled with AVX-512 (F, BW, VL, VNNI) flags; only callable on the Avx512Vnni tier.
#pragma once

#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels::vnni {

// Tokens per pass over a 16-row group: their accumulators stay in registers.
constexpr int kQ4KMaxCols = 4;

// The mins operands of one token's Q8_K activations (n elements): per super-block s and pair p
// of sub-blocks, out[4 s + p] holds the activation sums of sub-blocks 2p (low 16 bits) and
// 2p + 1 (high 16 bits), each the sum of two of Q8_K's 16-element sums (|sum| <= 4096).
void q4_K_min_operands(const BlockQ8_K* a, int64_t n, int32_t* out);

// Y[t*ldy + r] = W[r] · act[t] for rows [r0, r1) of the packed Q4_K groups at `packed`
// (r0 a multiple of 16; row 0 = the start of `packed`), n elements per row (n a multiple of
// 256), T tokens of Q8_K activations acts[t] and their mins operands at mins + t · n / 64.
void gemm_packed_q4_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* mins, int64_t T, float* y, int64_t ldy);
// The same for packed Q5_K (the Q4_K layout plus its high-bit lines; the same mins operands).
void gemm_packed_q5_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* mins, int64_t T, float* y, int64_t ldy);

// Tokens per pass over a 16-row group: their accumulators stay in registers.
constexpr int kQ6KMaxCols = 4;

// The sub-block offsets of one token's Q8_K activations (n elements): out[16 s + j] =
// −32 · bsums[j] of super-block s, where that sub-block's integer sum starts.
void q6_K_offsets(const BlockQ8_K* a, int64_t n, int32_t* out);

// Y[t*ldy + r] = W[r] · act[t] for rows [r0, r1) of the packed Q6_K groups at `packed`
// (r0 a multiple of 16; row 0 = the start of `packed`), n elements per row (n a multiple of
// 256), T tokens of Q8_K activations acts[t] and their offsets at offsets + t · n / 16.
void gemm_packed_q6_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* offsets, int64_t T, float* y, int64_t ldy);

}  // namespace tandem::kernels::vnni
