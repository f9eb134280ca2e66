// Compiled with -mamx-tile -mamx-int8 -mamx-bf16 and the AVX-512 flags (see CMakeLists.txt).
// Plain code, intrinsics and simd_avx512.h's static inline helpers only: no library templates
// or inline library functions, so no AMX / AVX-512 instruction can end up in a function another
// translation unit links to.
#include "kernels/matmul/matmul_amx.h"

#include "kernels/matmul/weight_pack.h"

#include <immintrin.h>

#include "gguf/ggml_type.h"
#include "gguf/quants.h"
#include "kernels/matmul/amx_tiles.h"
#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_epi32, _mm512_zextsi256_si512, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::amx {
namespace {

using namespace tiles;


// GEMM tiles: 0, 1 int32 results (m tokens × 16 rows); 2, 3 activations (m tokens ×
// 32 bytes); 4, 5 weights (8 rows of 16 × 4 bytes).
void config_gemm(int m) {
  TileConfig cfg;
  zero_config(&cfg);
  cfg.palette = 1;
  for (int t = 0; t < 2; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(m);
    cfg.colsb[t] = 64;
  }
  for (int t = 2; t < 4; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(m);
    cfg.colsb[t] = 32;
  }
  for (int t = 4; t < 6; ++t) {
    cfg.rows[t] = 8;
    cfg.colsb[t] = 64;
  }
  load_config(&cfg);
}

constexpr int kBlockTile = 16 * kQK;  // bytes of one A or B tile (one 32-element block)

inline int64_t groups_of(int64_t T) { return (T + kTileCols - 1) / kTileCols; }

// Writes the 16 rows × 32 codes of one block (q[o] points at row o's 32 codes, already
// unpacked to signed bytes in `rows32`) as a VNNI B tile: dword k/4 of row o goes to
// tile dword (k/4)*16 + o.
inline void store_b_tile(const __m256i* rows32, uint8_t* tile) {
  // 16 rows × 8 dwords -> 8 tile rows × 16 dwords: transpose with two 8×8 passes.
  alignas(64) uint32_t tmp[16][8];
  for (int o = 0; o < 16; ++o) _mm256_store_si256(reinterpret_cast<__m256i*>(tmp[o]), rows32[o]);
  auto* out = reinterpret_cast<uint32_t*>(tile);
  const __m512i idx = _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120);
  for (int kk = 0; kk < 8; ++kk)
    _mm512_store_si512(out + 16 * kk, _mm512_i32gather_epi32(idx, &tmp[0][kk], 4));
}

// Unpacks rows [o0, o0 + 16) ∩ [0, rows) of the weights into one 16-row group of the
// panel: nb B tiles, then nb × 16 scales.
void unpack_group_q4_0(const uint8_t* w, size_t stride, int64_t nb, int64_t rows, int64_t o0, uint8_t* group) {
  float* scales = reinterpret_cast<float*>(group + nb * kBlockTile);
  const __m128i m4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i r[16];
    for (int o = 0; o < 16; ++o) {
      if (o0 + o >= rows) {
        r[o] = _mm256_setzero_si256();
        scales[b * 16 + o] = 0.0f;
        continue;
      }
      const auto* blk = reinterpret_cast<const BlockQ4_0*>(w + static_cast<size_t>(o0 + o) * stride) + b;
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->qs));
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), eight);
      r[o] = _mm256_set_m128i(hi, lo);
      scales[b * 16 + o] = _cvtsh_ss(blk->d);
    }
    store_b_tile(r, group + b * kBlockTile);
  }
}

void unpack_group_q8_0(const uint8_t* w, size_t stride, int64_t nb, int64_t rows, int64_t o0, uint8_t* group) {
  float* scales = reinterpret_cast<float*>(group + nb * kBlockTile);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i r[16];
    for (int o = 0; o < 16; ++o) {
      if (o0 + o >= rows) {
        r[o] = _mm256_setzero_si256();
        scales[b * 16 + o] = 0.0f;
        continue;
      }
      const auto* blk = reinterpret_cast<const BlockQ8_0*>(w + static_cast<size_t>(o0 + o) * stride) + b;
      r[o] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs));
      scales[b * 16 + o] = _cvtsh_ss(blk->d);
    }
    store_b_tile(r, group + b * kBlockTile);
  }
}

// Packed weights (weight_pack.h): `w` is the packed matrix, `stride` its group size,
// o0 a multiple of 16. Q4_0: each 64-byte packed row gives B-tile rows i (low nibbles) and
// 4 + i (high nibbles) as 16·(q − 8); the 16 is taken out of the scales (exactly: a power
// of two). Q8_0: the tiles are copied as they are.
void unpack_packed_q4_0(const uint8_t* w, size_t stride, int64_t nb, int64_t, int64_t o0, uint8_t* group) {
  const uint8_t* src = w + static_cast<size_t>(o0 / 16) * stride;
  const auto* sh = reinterpret_cast<const uint16_t*>(src + nb * 256);
  float* scales = reinterpret_cast<float*>(group + nb * kBlockTile);
  const __m512i hi4 = _mm512_set1_epi8(static_cast<char>(0xF0));
  const __m512 sixteenth = _mm512_set1_ps(1.0f / 16.0f);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* tile = group + b * kBlockTile;
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512i x = _mm512_load_si512(src + b * 256 + 64 * i);
      _mm512_store_si512(tile + 64 * i, _mm512_and_si512(_mm512_slli_epi16(x, 4), hi4));
      _mm512_store_si512(tile + 64 * (4 + i), _mm512_and_si512(x, hi4));
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sh + 16 * b)));
    _mm512_store_ps(scales + 16 * b, _mm512_mul_ps(d, sixteenth));
  }
}

void unpack_packed_q8_0(const uint8_t* w, size_t stride, int64_t nb, int64_t, int64_t o0, uint8_t* group) {
  const uint8_t* src = w + static_cast<size_t>(o0 / 16) * stride;
  const auto* sh = reinterpret_cast<const uint16_t*>(src + nb * 512);
  float* scales = reinterpret_cast<float*>(group + nb * kBlockTile);
  for (int64_t b = 0; b < nb; ++b) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
      _mm512_store_si512(group + b * kBlockTile + 64 * i, _mm512_load_si512(src + b * 512 + 64 * i));
    _mm512_store_ps(scales + 16 * b,
                    _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sh + 16 * b))));
  }
}

// acc[t] += float(c[t]) * (dw * da[t]) for the M tokens of one block's result tile.
template <int M>
inline void scale_add(const int32_t* c, const float* dw, const float* da, __m512* acc) {
  const __m512 w = _mm512_load_ps(dw);
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) {
    const __m512 s = _mm512_mul_ps(w, _mm512_set1_ps(da[t]));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * t)), s, acc[t]);
  }
}

// One 16-token group × one 16-row group over all nb blocks. a: the group's A tiles
// (nb × 512 bytes) then scales (nb × 16); b: the row group's B tiles then scales.
// Software pipelined by one step of two blocks: step s multiplies blocks 2s, 2s + 1 in
// tiles 0 and 1 and stores them to one half of cbuf while the vector units scale the
// other half (step s − 1), so the loads never wait for a tile store just issued (tile
// stores do not forward to loads).
// B tiles are prefetched this many blocks ahead (+5-10% on K = 1024 shapes, neutral at 3584).
constexpr int64_t kPrefetchBlocks = 4;

// M: the tile's token rows (the configured tile height; tokens past ntok are zero padding).
template <int M>
void group_product(const uint8_t* a, const float* da, const uint8_t* b, const float* dw, int64_t nb, float* y,
                   int64_t ldy, int ntok, __mmask16 rmask, int32_t* cbuf) {
  __m512 acc[M];
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) acc[t] = _mm512_setzero_ps();
  const int64_t steps = (nb + 1) / 2;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t k = 2 * s;
    int32_t* cb = cbuf + (s & 1) * 512;
    if (k + kPrefetchBlocks < nb) {  // the row group's B tiles come from L2: ask for two blocks early
      const char* next = reinterpret_cast<const char*>(b + (k + kPrefetchBlocks) * kBlockTile);
#pragma GCC unroll 16
      for (int l = 0; l < 16; ++l) _mm_prefetch(next + 64 * l, _MM_HINT_T0);
    }
    TANDEM_TILE_ZERO(0);
    TANDEM_TILE_LOAD(2, a + k * kBlockTile, 32);
    TANDEM_TILE_LOAD(4, b + k * kBlockTile, 64);
    TANDEM_TILE_DPBSSD(0, 2, 4);
    const bool two = k + 1 < nb;
    if (two) {
      TANDEM_TILE_ZERO(1);
      TANDEM_TILE_LOAD(3, a + (k + 1) * kBlockTile, 32);
      TANDEM_TILE_LOAD(5, b + (k + 1) * kBlockTile, 64);
      TANDEM_TILE_DPBSSD(1, 3, 5);
    }
    if (s > 0) {  // the previous step always had two blocks
      const int32_t* pb = cbuf + ((s - 1) & 1) * 512;
      scale_add<M>(pb, dw + (k - 2) * 16, da + (k - 2) * 16, acc);
      scale_add<M>(pb + 256, dw + (k - 1) * 16, da + (k - 1) * 16, acc);
    }
    TANDEM_TILE_STORE(0, cb, 64);
    if (two) TANDEM_TILE_STORE(1, cb + 256, 64);
  }
  if (steps > 0) {
    const int64_t k = 2 * (steps - 1);
    const int32_t* pb = cbuf + ((steps - 1) & 1) * 512;
    scale_add<M>(pb, dw + k * 16, da + k * 16, acc);
    if (k + 1 < nb) scale_add<M>(pb + 256, dw + (k + 1) * 16, da + (k + 1) * 16, acc);
  }
  for (int t = 0; t < ntok; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

// Few tokens (one token group) from packed weights: one 16-row group streamed block by
// block. The weights are read once, so unpacking them into a panel first would leave the
// memory idle while the tiles work and the tiles idle while the memory streams; here each
// step unpacks two blocks ahead into a 4-slot ring (and prefetches further ahead) while
// the tile unit multiplies the current pair and the vector units scale the previous pair.
constexpr int64_t kStreamPrefetchBlocks = 16;
// Both streams also ask for the lines ~10 KB ahead into L2 only. One prefetch distance into
// L1 leaves the memory idle whenever the arithmetic runs long (a 1+3 pass does four tokens'
// products per block): with the L2 request well ahead, the line is on its way when the L1
// prefetch for it comes. 1 GiB Q4_0 stream, 2 threads, side by side: vector units T = 4
// 51.1 -> 47.2 ms, T = 1 43.7 -> 43.1 ms (distances of 8-12 KB alike; 20 KB no gain);
// tiles T = 8 62.8 -> 60.1 ms.
constexpr int64_t kStreamL2PrefetchBytes = 10240;

template <int M, bool Q4>
void stream_group(const uint8_t* src, int64_t nb, const uint8_t* a, const float* da, float* y, int64_t ldy, int ntok,
                  __mmask16 rmask, int32_t* cbuf, uint8_t* ring) {
  constexpr int64_t tb = Q4 ? 256 : 512;  // packed bytes per block
  const auto* sh = reinterpret_cast<const uint16_t*>(src + nb * tb);
  const __m512i hi4 = _mm512_set1_epi8(static_cast<char>(0xF0));
  const __m512 wscale = _mm512_set1_ps(Q4 ? 1.0f / 16.0f : 1.0f);
  auto unpack = [&](int64_t blk) {
    if (blk >= nb) return;
    const uint8_t* in = src + blk * tb;
    uint8_t* tile = ring + (blk & 3) * kBlockTile;
    if (blk + kStreamPrefetchBlocks < nb) {
#pragma GCC unroll 8
      for (int l = 0; l < tb / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(in + kStreamPrefetchBlocks * tb + 64 * l), _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int l = 0; l < tb / 64; ++l) _mm_prefetch(reinterpret_cast<const char*>(in + kStreamL2PrefetchBytes + 64 * l), _MM_HINT_T1);
    if constexpr (Q4) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512i x = _mm512_load_si512(in + 64 * i);
        _mm512_store_si512(tile + 64 * i, _mm512_and_si512(_mm512_slli_epi16(x, 4), hi4));
        _mm512_store_si512(tile + 64 * (4 + i), _mm512_and_si512(x, hi4));
      }
    } else {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm512_store_si512(tile + 64 * i, _mm512_load_si512(in + 64 * i));
    }
  };
  auto dw = [&](int64_t blk) {
    return _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sh + 16 * blk))), wscale);
  };
  __m512 acc[M];
#pragma GCC unroll 16
  for (int t = 0; t < M; ++t) acc[t] = _mm512_setzero_ps();
  auto scale = [&](const int32_t* c, __m512 w, const float* dab) {
#pragma GCC unroll 16
    for (int t = 0; t < M; ++t) {
      const __m512 sc = _mm512_mul_ps(w, _mm512_set1_ps(dab[t]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * t)), sc, acc[t]);
    }
  };
  unpack(0);
  unpack(1);
  const int64_t steps = (nb + 1) / 2;
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t k = 2 * s;
    int32_t* cb = cbuf + (s & 1) * 512;
    unpack(k + 2);
    unpack(k + 3);
    TANDEM_TILE_ZERO(0);
    TANDEM_TILE_LOAD(2, a + k * kBlockTile, 32);
    TANDEM_TILE_LOAD(4, ring + (k & 3) * kBlockTile, 64);
    TANDEM_TILE_DPBSSD(0, 2, 4);
    const bool two = k + 1 < nb;
    if (two) {
      TANDEM_TILE_ZERO(1);
      TANDEM_TILE_LOAD(3, a + (k + 1) * kBlockTile, 32);
      TANDEM_TILE_LOAD(5, ring + ((k + 1) & 3) * kBlockTile, 64);
      TANDEM_TILE_DPBSSD(1, 3, 5);
    }
    if (s > 0) {
      const int32_t* pb = cbuf + ((s - 1) & 1) * 512;
      scale(pb, dw(k - 2), da + (k - 2) * 16);
      scale(pb + 256, dw(k - 1), da + (k - 1) * 16);
    }
    TANDEM_TILE_STORE(0, cb, 64);
    if (two) TANDEM_TILE_STORE(1, cb + 256, 64);
  }
  if (steps > 0) {
    const int64_t k = 2 * (steps - 1);
    const int32_t* pb = cbuf + ((steps - 1) & 1) * 512;
    scale(pb, dw(k), da + k * 16);
    if (k + 1 < nb) scale(pb + 256, dw(k + 1), da + (k + 1) * 16);
  }
  for (int t = 0; t < ntok; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

template <int M, bool Q4>
void stream_packed(const uint8_t* packed, size_t group_bytes, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts,
                   int64_t T, float* y, int64_t ldy, uint8_t* ring) {
  alignas(64) int32_t cbuf[4 * 256];
  config_gemm(M);
  const float* da = reinterpret_cast<const float*>(acts + nb * kBlockTile);
  for (int64_t o0 = r0; o0 < r1; o0 += 16) {
    const int64_t left = r1 - o0;
    const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    stream_group<M, Q4>(packed + static_cast<size_t>(o0 / 16) * group_bytes, nb, acts, da, y + o0, ldy,
                        static_cast<int>(T), rmask, cbuf, ring);
  }
  release_tiles();
}

static_assert(kVnniMaxCols == 4 && kTileCols % kVnniMaxCols == 0, "vnni_rows instantiates 1 .. 4 tokens per chunk");

// NC <= kVnniMaxCols tokens × one packed 16-row group on the vector units. The same
// groups the tiles read, as VPDPBUSD operands: a B-tile line is 16 rows × 4 codes, so one instruction
// multiplies it by 4 codes of a token broadcast from its A-tile row, and lane o of every
// register is row o (no tile store, no horizontal sum). VPDPBUSD wants the weights unsigned:
// Q4_0 nibbles XOR 8 give the code q (value q − 8), Q8_0 codes XOR 0x80 give w + 128; the
// offset comes back as sums[t][b] = −8 · Σa (Q4_0) or −128 · Σa (Q8_0), the sum the dot
// product starts from. The integer block sum s is then the tile product's, except that the
// Q4_0 tiles hold 16·(q − 8) and so compute 16·s, scaled by d_w / 16: the products
// (16·s)·((d_w / 16)·d_a) and s·(d_w·d_a) are the same real number (scaling by a power of
// two is exact), so one FMA rounds them alike and every output equals the tile path's bit
// for bit without the shift and the 1/16. With one or two tokens each token's eight VPDPBUSD
// run as two chains of four (integer sums: the order does not matter), interleaved across
// the tokens, so the units are not left waiting on one 8-deep chain per token and block; with
// three or four tokens there are enough independent chains already, and one chain per token
// saves the add that joins two (0.8B 1+3 verify pass, side by side: 14.20 -> 14.14 and
// 14.25 -> 14.10 ms).
template <int NC, bool Q4>
void vnni_group(const uint8_t* src, int64_t nb, const uint8_t* a, const float* da, const int32_t* sums, float* y,
                int64_t ldy, __mmask16 rmask) {
  constexpr int64_t tb = Q4 ? 256 : 512;
  const auto* sh = reinterpret_cast<const uint16_t*>(src + nb * tb);
  const __m512i m4 = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(static_cast<char>(Q4 ? 0x88 : 0x80));
  __m512 acc[NC];
#pragma GCC unroll 8
  for (int t = 0; t < NC; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = src + b * tb;
    // Past the group's last block this reaches its scales and the next group: the stream.
#pragma GCC unroll 8
    for (int l = 0; l < tb / 64; ++l) {
      _mm_prefetch(reinterpret_cast<const char*>(in + kStreamPrefetchBlocks * tb + 64 * l), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(in + kStreamL2PrefetchBytes + 64 * l), _MM_HINT_T1);
    }
    __m512i w[8];
    if constexpr (Q4) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512i x = _mm512_xor_si512(_mm512_load_si512(in + 64 * i), flip);
        w[i] = _mm512_and_si512(x, m4);                             // codes 4i .. 4i + 3
        w[4 + i] = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);  // codes 16 + 4i ..
      }
    } else {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) w[i] = _mm512_xor_si512(_mm512_load_si512(in + 64 * i), flip);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sh + 16 * b)));
    const uint8_t* ab = a + b * kBlockTile;
    __m512i lo[NC], hi[NC];
#pragma GCC unroll 8
    for (int t = 0; t < NC; ++t) {
      lo[t] = _mm512_set1_epi32(sums[t * nb + b]);
      hi[t] = _mm512_setzero_si512();
    }
    constexpr bool one_chain = NC >= 3;
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
#pragma GCC unroll 8
      for (int t = 0; t < NC; ++t) {
        const int32_t* q = reinterpret_cast<const int32_t*>(ab + t * kQK);
        avx512::dpbusd_bcast(lo[t], w[i], q + i);
        avx512::dpbusd_bcast(one_chain ? lo[t] : hi[t], w[4 + i], q + 4 + i);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < NC; ++t) {
      const __m512i c = one_chain ? lo[t] : _mm512_add_epi32(lo[t], hi[t]);
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(da[b * 16 + t]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), sc, acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < NC; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

// Rows [r0, r1) of the packed groups × all T tokens, 16 rows at a time; within a group the
// tokens go in chunks of 4 (never across a 16-token A-tile group), so the group's weights
// (nb × 288 or 544 bytes) stay in L1 while every chunk reuses them.
template <bool Q4>
void vnni_rows(const uint8_t* packed, size_t group_bytes, int64_t nb, int64_t r0, int64_t r1, const uint8_t* acts,
               int64_t T, float* y, int64_t ldy) {
  const int64_t groups = groups_of(T);
  const auto* sums = reinterpret_cast<const int32_t*>(acts + q8_tiles_bytes(nb * kQK, T));
  const float* scales = reinterpret_cast<const float*>(acts + groups * nb * kBlockTile);
  for (int64_t o0 = r0; o0 < r1; o0 += 16) {
    const int64_t left = r1 - o0;
    const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    const uint8_t* grp = packed + static_cast<size_t>(o0 / 16) * group_bytes;
    for (int64_t c0 = 0; c0 < T; c0 += kVnniMaxCols) {
      const int64_t tg = c0 / kTileCols, r = c0 % kTileCols;
      const uint8_t* a = acts + tg * nb * kBlockTile + r * kQK;
      const float* da = scales + tg * nb * 16 + r;
      const int32_t* s = sums + c0 * nb;
      float* yc = y + c0 * ldy + o0;
      switch (T - c0 < kVnniMaxCols ? T - c0 : kVnniMaxCols) {
        case 1: vnni_group<1, Q4>(grp, nb, a, da, s, yc, ldy, rmask); break;
        case 2: vnni_group<2, Q4>(grp, nb, a, da, s, yc, ldy, rmask); break;
        case 3: vnni_group<3, Q4>(grp, nb, a, da, s, yc, ldy, rmask); break;
        default: vnni_group<4, Q4>(grp, nb, a, da, s, yc, ldy, rmask); break;
      }
    }
  }
}

template <bool Q4>
void stream_packed_any(const uint8_t* packed, size_t group_bytes, int64_t nb, int64_t r0, int64_t r1,
                       const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* ring) {
  switch (tile_tokens(T)) {
    case 1: stream_packed<1, Q4>(packed, group_bytes, nb, r0, r1, acts, T, y, ldy, ring); break;
    case 2: stream_packed<2, Q4>(packed, group_bytes, nb, r0, r1, acts, T, y, ldy, ring); break;
    case 4: stream_packed<4, Q4>(packed, group_bytes, nb, r0, r1, acts, T, y, ldy, ring); break;
    case 8: stream_packed<8, Q4>(packed, group_bytes, nb, r0, r1, acts, T, y, ldy, ring); break;
    default: stream_packed<16, Q4>(packed, group_bytes, nb, r0, r1, acts, T, y, ldy, ring); break;
  }
}

// ggml's Q8_0 activation rule, as activation_quant.cpp's to_q8_0 (the test compares the
// two through the scalar reference): amax ignoring NaN, d = fp16(amax / 127),
// q = round-half-even(x * (127 / amax)) clamped to [-127, 127], NaN -> 0. This writes the 32
// codes of a block given id = 127 / amax (0 when amax is 0); pack_q8_tile_column finds amax,
// d and id for 16 blocks at a time.
inline void quantize_codes(__m512 v0, __m512 v1, float id, uint8_t* out) {
  const __m512 vid = _mm512_set1_ps(id), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  __m512i q[2];
  const __m512 v[2] = {v0, v1};
  for (int h = 0; h < 2; ++h) {
    __m512 y = _mm512_mul_ps(v[h], vid);
    y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, y, _CMP_ORD_Q), y);
    y = _mm512_min_ps(_mm512_max_ps(y, lo), hi);
    q[h] = _mm512_cvtps_epi32(_mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q[0]));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(q[1]));
}

using UnpackFn = void (*)(const uint8_t*, size_t, int64_t, int64_t, int64_t, uint8_t*);

template <int M>
void run_groups(const uint8_t* acts, int64_t nb, int64_t groups, int64_t T, int64_t r0, int64_t r1,
                const uint8_t* panel, size_t group_bytes, float* y, int64_t ldy) {
  alignas(64) int32_t cbuf[4 * 256];
  config_gemm(M);
  const uint8_t* a_codes = acts;
  const float* a_scales = reinterpret_cast<const float*>(acts + groups * nb * kBlockTile);
  const int64_t rgroups = (r1 - r0 + 15) / 16;
  for (int64_t tg = 0; tg < groups; ++tg) {
    const int ntok = static_cast<int>(T - tg * kTileCols < kTileCols ? T - tg * kTileCols : kTileCols);
    const uint8_t* a = a_codes + tg * nb * kBlockTile;
    const float* da = a_scales + tg * nb * 16;
    for (int64_t g = 0; g < rgroups; ++g) {
      const int64_t o0 = r0 + 16 * g;
      const int64_t left = r1 - o0;
      const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
      const uint8_t* bg = panel + g * group_bytes;
      group_product<M>(a, da, bg, reinterpret_cast<const float*>(bg + nb * kBlockTile), nb,
                       y + tg * kTileCols * ldy + o0, ldy, ntok, rmask, cbuf);
    }
  }
  release_tiles();
}

void gemm(UnpackFn unpack, const uint8_t* w, size_t stride, int64_t n, int64_t rows, int64_t r0, int64_t r1,
          const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel) {
  const int64_t nb = n / kQK;
  const int64_t groups = groups_of(T);
  const int64_t rgroups = (r1 - r0 + 15) / 16;
  const size_t group_bytes = static_cast<size_t>(nb) * (kBlockTile + 64);
  for (int64_t g = 0; g < rgroups; ++g) unpack(w, stride, nb, rows, r0 + 16 * g, panel + g * group_bytes);
  switch (tile_tokens(T)) {
    case 1: run_groups<1>(acts, nb, groups, T, r0, r1, panel, group_bytes, y, ldy); break;
    case 2: run_groups<2>(acts, nb, groups, T, r0, r1, panel, group_bytes, y, ldy); break;
    case 4: run_groups<4>(acts, nb, groups, T, r0, r1, panel, group_bytes, y, ldy); break;
    case 8: run_groups<8>(acts, nb, groups, T, r0, r1, panel, group_bytes, y, ldy); break;
    default: run_groups<16>(acts, nb, groups, T, r0, r1, panel, group_bytes, y, ldy); break;
  }
}

}  // namespace

size_t q8_tiles_bytes(int64_t n, int64_t T) {
  return static_cast<size_t>(groups_of(T)) * static_cast<size_t>(n / kQK) * (kBlockTile + 64);
}

void pack_q8_tile_column(const float* x, int64_t n, int64_t T, int64_t t, uint8_t* acts) {
  const int64_t nb = n / kQK, groups = groups_of(T);
  const int64_t tg = t / kTileCols, r = t % kTileCols;
  uint8_t* codes = acts + tg * nb * kBlockTile + r * kQK;
  float* scales = reinterpret_cast<float*>(acts + groups * nb * kBlockTile) + tg * nb * 16 + r;
  // 16 blocks at a time: their maxima in one reduction tree and d, 1/d in one register each.
  // A block at a time, the horizontal max, two scalar divisions and the fp16 rounding formed a
  // chain of ~50 cycles per block, on the calling thread (few tokens are packed serially).
  // max is exact and the divisions and the rounding are the same IEEE operations, so the
  // codes and scales are the ones the block-at-a-time rule gives.
  const __m512 zero = _mm512_setzero_ps(), c127 = _mm512_set1_ps(127.0f);
  for (int64_t b0 = 0; b0 < nb; b0 += 16) {
    const int nk = nb - b0 < 16 ? static_cast<int>(nb - b0) : 16;
    __m512 m[16];
    for (int j = 0; j < 16; ++j) {
      __m512 mj = zero;
      if (j < nk) {
        const float* xb = x + (b0 + j) * kQK;
        // vmaxps returns its second operand when either is NaN: NaN lanes of x are ignored.
        mj = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb)), zero);
        mj = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb + 16)), mj);
      }
      m[4 * (j % 4) + j / 4] = mj;  // so that block j's maximum lands in lane j
    }
    const __m512 amax = avx512::reduce16_transposed(m, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
    alignas(64) float d[16], id[16];
    _mm512_store_ps(d, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_div_ps(amax, c127), _MM_FROUND_TO_NEAREST_INT)));
    _mm512_store_ps(id, _mm512_maskz_div_ps(_mm512_cmp_ps_mask(amax, zero, _CMP_NEQ_OQ), c127, amax));
    for (int j = 0; j < nk; ++j) {
      const int64_t b = b0 + j;
      scales[b * 16] = d[j];
      quantize_codes(_mm512_loadu_ps(x + b * kQK), _mm512_loadu_ps(x + b * kQK + 16), id[j], codes + b * kBlockTile);
    }
  }
}

void pad_q8_tiles(int64_t n, int64_t T, uint8_t* acts) {
  const int64_t nb = n / kQK, groups = groups_of(T);
  const int64_t tg = groups - 1;
  float* scales = reinterpret_cast<float*>(acts + groups * nb * kBlockTile) + tg * nb * 16;
  const int64_t end = T < kTileCols ? tile_tokens(T) : groups * kTileCols;
  for (int64_t t = T; t < end; ++t) {
    const int64_t r = t % kTileCols;
    for (int64_t b = 0; b < nb; ++b) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acts + tg * nb * kBlockTile + b * kBlockTile + r * kQK),
                          _mm256_setzero_si256());
      scales[b * 16 + r] = 0.0f;
    }
  }
}

size_t vnni_sums_bytes(int64_t n, int64_t T) { return static_cast<size_t>(T * (n / kQK)) * sizeof(int32_t); }

void vnni_sums_column(GgmlType type, int64_t n, int64_t T, int64_t t, uint8_t* acts) {
  const int64_t nb = n / kQK;
  const int32_t factor = type == GgmlType::Q4_0 ? -8 : -128;
  int32_t* sums = reinterpret_cast<int32_t*>(acts + q8_tiles_bytes(n, T)) + t * nb;
  const uint8_t* codes = acts + (t / kTileCols) * nb * kBlockTile + (t % kTileCols) * kQK;
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + b * kBlockTile));
    const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_zextsi256_si512(q));
    sums[b] = factor * _mm512_reduce_add_epi32(s);
  }
}

void gemm_packed_vnni(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const uint8_t* acts,
                      int64_t T, float* y, int64_t ldy) {
  const int64_t nb = n / kQK;
  const size_t gb = packed_group_bytes(type, n);
  if (type == GgmlType::Q4_0) vnni_rows<true>(packed, gb, nb, r0, r1, acts, T, y, ldy);
  else vnni_rows<false>(packed, gb, nb, r0, r1, acts, T, y, ldy);
}

size_t panel_bytes(int64_t n) {
  return static_cast<size_t>(kPanelRows / 16) * static_cast<size_t>(n / kQK) * (kBlockTile + 64);
}

void gemm_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t rows, int64_t r0, int64_t r1,
               const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel) {
  gemm(unpack_group_q4_0, w, stride, n, rows, r0, r1, acts, T, y, ldy, panel);
}

void gemm_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t rows, int64_t r0, int64_t r1,
               const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel) {
  gemm(unpack_group_q8_0, w, stride, n, rows, r0, r1, acts, T, y, ldy, panel);
}

void gemm_packed(GgmlType type, const uint8_t* packed, int64_t n, int64_t rows, int64_t r0, int64_t r1,
                 const uint8_t* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel, bool vector_units) {
  if (vector_units) {  // few tokens (matmul's choice): the vector units
    gemm_packed_vnni(type, packed, n, r0, r1, acts, T, y, ldy);
    return;
  }
  if (T <= kTileCols) {  // one token group: stream the weights (the panel only serves reuse)
    const int64_t nb = n / kQK;
    const size_t gb = packed_group_bytes(type, n);
    if (type == GgmlType::Q4_0) stream_packed_any<true>(packed, gb, nb, r0, r1, acts, T, y, ldy, panel);
    else stream_packed_any<false>(packed, gb, nb, r0, r1, acts, T, y, ldy, panel);
    return;
  }
  gemm(type == GgmlType::Q4_0 ? unpack_packed_q4_0 : unpack_packed_q8_0, packed, packed_group_bytes(type, n), n, rows,
       r0, r1, acts, T, y, ldy, panel);
}

int64_t peak_amx_int8(int64_t iters, int k_bytes) {
  TileConfig cfg;
  zero_config(&cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = t >= 6 ? static_cast<uint8_t>(k_bytes / 4) : 16;
    cfg.colsb[t] = t >= 4 && t < 6 ? static_cast<uint16_t>(k_bytes) : 64;
  }
  // 0-3: C; 4, 5: A (16 × k_bytes); 6, 7: B (k_bytes/4 × 64).
  load_config(&cfg);
  alignas(64) int8_t src[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) src[i] = static_cast<int8_t>(i * 7 - 3);
  __asm__ volatile("" ::: "memory");
  TANDEM_TILE_ZERO(0);
  TANDEM_TILE_ZERO(1);
  TANDEM_TILE_ZERO(2);
  TANDEM_TILE_ZERO(3);
  TANDEM_TILE_LOAD(4, src, 64);
  TANDEM_TILE_LOAD(5, src, 64);
  TANDEM_TILE_LOAD(6, src, 64);
  TANDEM_TILE_LOAD(7, src, 64);
  for (int64_t i = 0; i < iters; ++i) {
    TANDEM_TILE_DPBSSD(0, 4, 6);
    TANDEM_TILE_DPBSSD(1, 4, 7);
    TANDEM_TILE_DPBSSD(2, 5, 6);
    TANDEM_TILE_DPBSSD(3, 5, 7);
  }
  alignas(64) int32_t out[256];
  TANDEM_TILE_STORE(0, out, 64);
  release_tiles();
  __asm__ volatile("" ::"r"(out[0]) : "memory");
  return iters * 4 * 16 * 16 * k_bytes;
}

int64_t peak_vnni_int8(int64_t iters) {
  __m512i acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), "+v"(acc[4]), "+v"(acc[5]),
                     "+v"(acc[6]), "+v"(acc[7]));
  }
  __m512i s = acc[0];
  for (int j = 1; j < 8; ++j) s = _mm512_add_epi32(s, acc[j]);
  __asm__ volatile("" ::"v"(s));
  return iters * 8 * 64;
}

#undef TANDEM_TILE_LOAD
#undef TANDEM_TILE_STORE
#undef TANDEM_TILE_ZERO
#undef TANDEM_TILE_DPBSSD

}  // namespace tandem::kernels::amx
