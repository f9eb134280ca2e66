// Packed Q4_K / Q5_K / Q6_K weights × Q8_K activations on the AMX tiles: prompt-sized batches (24
// tokens and more, matmul.cpp) of a Q4_K_M, Q5_K_M or Q6_K file. (Q6_K: see the Q6_K section of
// the .cpp — signed scales as three balanced base-8 digits, three weight tiles per chunk.)
//
// Why: on the vector units (matmul_kquant_vnni.h) every token pays one VPDPBUSD per 16 rows × 4
// codes plus a 32-bit multiply per sub-block; a prompt is then arithmetic-bound well below the
// Q4_0 file's rate (whose blocks run on the tiles). A K-quant's sub-blocks each carry a 6-bit
// scale, so a tile product per 32-element sub-block would leave its scaling (a VPMULLD per
// token, row and sub-block) to the vector units. Instead the scales go into the weight tiles:
// scale = (scale & 7) + 8 · (scale >> 3), and code × either part fits a byte (at most 31 × 7), so
// two weight tiles per 64 elements — code × low part, code × high part — accumulate a whole
// super-block in two result tiles (TDPBSUD: signed activation bytes, unsigned weight bytes),
// and the vector units only form low + 8 · high per super-block.
//
// The integer sum is the vector-unit kernel's exactly (Σ_j scale_j · Σ code × activation, in
// int32, no overflow), and the float step per super-block is the same operations in the same
// order (isum × (d_w · d_a) − minsum × (dmin_w · d_a), the mins term by VPDPWSSD on pairs of
// sub-blocks), so every output is bit for bit the vector units' (and a prompt's column bit for
// bit its decode step's).
//
// Layouts:
//  * A tiles (kquant_tiles_bytes): per group of 16 tokens, per 64-element chunk q, 1024 bytes:
//    row r = the 64 Q8_K codes of token 16g + r for elements 64q .. 64q + 63 (rows past T zero);
//  * a per-thread panel (kquant_panel_bytes): one 16-row weight group unpacked, per chunk the
//    two weight tiles (16 quads × 16 rows × 4 bytes; quads 0-7 the chunk's first sub-block, 8-15
//    its second), each code (0..15, or 0..31 with Q5_K's fifth bit) times its scale part; for
//    Q6_K three tiles per chunk (quads 4·(j mod 4) + m of its four sub-blocks j), each signed
//    value (code − 32) times one scale digit.
//
// Compiled with the AMX and AVX-512 flags; only callable on the Amx tier.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "gguf/quants.h"

namespace tandem::kernels::amx {

size_t kquant_tiles_bytes(int64_t n, int64_t T);
// Writes token t's Q8_K codes (a: n / 256 blocks) into its row of the A tiles.
void kquant_tile_column(const BlockQ8_K* a, int64_t n, int64_t t, uint8_t* tiles);
// Zeroes the rows of the last group's tokens past T.
void kquant_pad_tiles(int64_t n, int64_t T, uint8_t* tiles);

size_t kquant_panel_bytes(int64_t n);

// Y[t*ldy + r] = W[r] · act[t] for rows [r0, r1) of the packed Q4_K, Q5_K or Q6_K groups at `packed`
// (r0 a multiple of 16; row 0 = the start of `packed`), n elements per row (a multiple of 256),
// T tokens: their A tiles, Q8_K blocks (acts[t], for the scales d) and mins operands (mins + t ·
// n / 64, vnni::q4_K_min_operands; unused for Q6_K). panel: kquant_panel_bytes(n), 64-byte aligned.
void gemm_packed_kquant_tiles(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                              const uint8_t* tiles, const BlockQ8_K* const* acts, const int32_t* mins, int64_t T,
                              float* y, int64_t ldy, uint8_t* panel);

}  // namespace tandem::kernels::amx
