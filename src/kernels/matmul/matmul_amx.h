// AMX (int8 tiles) products: Q4_0 and Q8_0 weights × Q8_0 activations. From the mmap'd
// ggml rows for T >= 16 columns (prefill); from weights packed at load in tile order
// (weight_pack.h) for every T, decode and verification included.
//
// Exactly the integer block sums of the scalar reference: one TDPBSSD per 32-element block
// (tile K = 32 bytes), so each 16×16 int32 tile is sumi_b(token, row) of one block; it is
// stored, converted and scaled by d_a(token, b) * d_w(row, b) in float with AVX-512 and
// accumulated in 16 zmm registers (one per token of the tile). Two blocks cannot share a
// tile product: their scales are arbitrary fp16 values, so no exact integer pre-scaling
// exists (and the Q8_K sub-block scales of the K-quants do not fit in int8 either).
//
// Layouts (all 64-byte aligned):
//  * activations ("A tiles"): per group of 16 tokens, per block: 16 rows × 32 signed codes
//    (ggml's Q8_0 codes, as quantize_activation makes them), then per group and block the
//    16 float scales d_a. Tokens past T are zero (codes and scales).
//  * weights: the mmap'd ggml blocks (or the packed groups, with a shift and a mask instead
//    of a gather) are unpacked per task into a per-thread panel of
//    kPanelRows rows: per 16 rows, per block, the VNNI "B tile" (8 rows of 16 × 4 bytes,
//    B[k/4][o*4 + k%4] = q(o, k), Q4_0 codes as q − 8), then the 16 float scales d_w; rows
//    past the matrix are zero. The panel is reused across all token groups.
//
// Measured on this machine (Sapphire Rapids class, in L1): TDPBSSD K = 32 costs the same
// ~16 cycles as K = 64 (half the tile ceiling); a 16-row TILESTORED costs ~17 cycles and
// does not overlap with the AVX-512 scaling (~19 cycles per block tile): stores + scaling
// bound a block tile at ~45 cycles in cache, whatever the pipelining depth. Loop order:
// token groups outer, row groups inner (the 16×K A tiles stay in L1, the panel in L2,
// its B tiles prefetched a few blocks ahead).
//
// One token group (5 <= T <= 16) from packed weights: no panel; each 16-row group streams
// block by block through a 4-slot ring (unpack two blocks ahead, prefetch 16 ahead) while
// the tiles multiply, and the A/C tiles have tile_tokens(T) rows. Fewer tokens (decode, a
// 1+3 verification) run on the vector units instead (kVnniMaxCols below). Every (token, row)
// output accumulates its blocks in the same order whatever T and unit, so a column is bit
// for bit its one-token product.
//
// Tile state is configured (ldtilecfg through inline asm over the whole 64-byte config:
// GCC 12's _tile_loadconfig claims to read 8 bytes only, so the config stores can be
// dropped) at the start of every gemm call and released (tilerelease) before it returns.
//
// Only callable when cpu_features() reports AMX-INT8 with OS permission (the Amx tier),
// except the activation tiles, vnni_sums_column and gemm_packed_vnni, which use AVX-512 VNNI only
// (the Avx512Vnni tier's packed path). This translation unit is compiled with AMX and AVX-512
// flags and uses no library templates or inline library code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace tandem::kernels::amx {

constexpr int kTileCols = 16;   // tokens per A tile (and weight rows per B tile)
constexpr int kPanelRows = 64;  // weight rows one task unpacks and reuses across all tokens

// Token rows of the A and C tiles for a call with T tokens: T <= 16 rounds up to 1, 2, 4,
// 8 or 16 (a decode step multiplies 1-row tiles, a 1+3 verification 4-row ones), more
// tokens use full 16-row tiles.
constexpr int tile_tokens(int64_t T) { return T >= 16 ? 16 : T > 8 ? 16 : T > 4 ? 8 : T > 2 ? 4 : T > 1 ? 2 : 1; }

// The activation A tiles, their code sums and gemm_packed_vnni use AVX-512 VNNI only (no tile
// instruction): the Avx512Vnni tier calls them too, for packed weights on its vector units.
// Bytes the A tiles of T tokens × n elements (n a multiple of 32) take.
size_t q8_tiles_bytes(int64_t n, int64_t T);
// Quantizes token t (n floats at x) like ggml's Q8_0 into its A-tile slots.
void pack_q8_tile_column(const float* x, int64_t n, int64_t T, int64_t t, uint8_t* acts);
// Zeroes the slots of the padding tokens the tiles read: [T, tile_tokens(T)) below 16
// tokens, else [T, round_up(T, 16)) (call once, after or before packing).
void pad_q8_tiles(int64_t n, int64_t T, uint8_t* acts);

// Up to kVnniMaxCols tokens, packed weights are multiplied on the vector units (VPDPBUSD on
// the same 16-row groups, with the same integer block sums and float operations as the
// tiles, so the same bits): a tile product of a few token rows costs what one of 16 does,
// and its store-and-scale chain per block held one-token decode to ~13 GB/s. Measured side
// by side (bench/gemv_bench, *_packed vs *_packed_tiles, 2 threads; bench/history/2026-11-30-xeon-amx.md, run I;
// earlier runs in brackets): a 0.8B FFN matrix in cache 0.32× the tile time at T = 1
// (0.29–0.46×), 0.57× at 4 (0.49–0.58×; an earlier run: 1.16× at 6); 2 GiB of Q4_0 0.85× at
// T = 1 (0.60–0.88×), 0.83× at 4 (0.73–0.91×). The calls
// need the tokens' code sums after their A tiles: vnni_sums_bytes more bytes, token t's
// filled by vnni_sums_column once its A-tile slots are packed.
constexpr int64_t kVnniMaxCols = 4;
size_t vnni_sums_bytes(int64_t n, int64_t T);
void vnni_sums_column(GgmlType type, int64_t n, int64_t T, int64_t t, uint8_t* acts);
// Y[t*ldy + r] = W[r] · act[t] for rows [r0, r1) (r0 a multiple of 16) of packed weights, any
// T, on the vector units: per 16-row group, tokens in chunks of kVnniMaxCols. acts: A tiles
// followed by the code sums (vnni_sums_column). Bit for bit what gemm_packed computes on the tiles.
void gemm_packed_vnni(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const uint8_t* acts,
                      int64_t T, float* y, int64_t ldy);

// Bytes of one per-thread weight panel of kPanelRows rows × n elements.
size_t panel_bytes(int64_t n);

// Y[t*ldy + r] = W[r] · act[t] for rows [r0, r1) (r1 − r0 <= kPanelRows), t < T.
// w: row 0 of the weight matrix (ggml blocks, `stride` bytes per row); rows: the matrix's
// row count (rows past it in the panel are zero); panel: panel_bytes(n), 64-byte aligned.
void gemm_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t rows, int64_t r0, int64_t r1,
               const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel);
void gemm_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t rows, int64_t r0, int64_t r1,
               const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel);

// The same product from weights packed at load (weight_pack.h): no gather, so it pays
// from T = 1 on (decode and verification as well as prefill). r0 must be a multiple of 16.
// vector_units: on VPDPBUSD (gemm_packed_vnni; acts then carry the code sums), else on the
// tiles; matmul asks for it up to kVnniMaxCols tokens.
void gemm_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t rows, int64_t r0, int64_t r1,
                 const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel, bool vector_units);

// In-cache int8 ceilings for benchmarks: `iters` rounds of back-to-back products on
// resident registers; return the number of multiply-accumulates done.
//  AMX: 4 independent TDPBSSD per round on 16×64 tiles (k_bytes = 64) or 16×32 (k_bytes = 32).
int64_t peak_amx_int8(int64_t iters, int k_bytes);
//  AVX-512 VNNI: 8 independent VPDPBUSD zmm per round.
int64_t peak_vnni_int8(int64_t iters);

}  // namespace tandem::kernels::amx
