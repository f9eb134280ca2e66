// Compiled with -mamx-tile -mamx-int8 and the AVX-512 flags (see CMakeLists.txt); plain code,
// intrinsics and static inline helpers only (as matmul_amx.cpp).
#include "kernels/matmul/matmul_kquant_amx.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/matmul/amx_tiles.h"
#include "kernels/matmul/packed_groups_avx512.h"
#include "kernels/matmul/weight_pack.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own intrinsics (as in
// the other AVX-512 kernel files).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::amx {
namespace {

using namespace tiles;

constexpr int64_t kRows = 16;       // weight rows per group, tokens per A tile
constexpr int64_t kChunk = 64;      // elements per tile product (two sub-blocks)
constexpr int64_t kTile = 1024;     // bytes of one tile (16 rows × 64 bytes)
constexpr int64_t kScales = static_cast<int64_t>(kQ4KScalesOffset);
constexpr int64_t kHigh = static_cast<int64_t>(kQ5KHighOffset);

// Tiles 0-3: int32 results (16 tokens × 16 rows) of token groups 0 and 1, low and high scale
// part each; 4, 5: the two groups' activations (16 tokens × 64 codes); 6, 7: the weights
// (16 quads of 16 rows × 4 bytes), low and high part. Each weight tile serves both token groups.
void config_tiles() {
  TileConfig cfg;
  zero_config(&cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = kRows;
    cfg.colsb[t] = 64;
  }
  load_config(&cfg);
}

// The row scales of sub-block j (16 rows, 0..63) split into their low and high three bits, each
// in both 16-bit halves of row o's dword: VPMULLW of a line of codes (two per 16-bit lane) by it
// multiplies every code of row o, and no product (at most 31 × 7) carries into the next byte.
inline void scale_parts(const uint8_t* sb, int j, __m512i* lo, __m512i* hi) {
  const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kScales + 16 * j)));
  const __m512i l = _mm512_and_si512(sc, _mm512_set1_epi32(7)), h = _mm512_srli_epi32(sc, 3);
  *lo = _mm512_or_si512(l, _mm512_slli_epi32(l, 16));
  *hi = _mm512_or_si512(h, _mm512_slli_epi32(h, 16));
}

// One 16-row group's codes as B tiles with the sub-block scales folded in: per super-block s and
// chunk c (sub-blocks 2c and 2c + 1), the tile of code × (scale & 7) and the tile of
// code × (scale >> 3), quads 0-7 from sub-block 2c (the low nibbles of code lines 8c .. 8c + 7,
// plus Q5_K's fifth bit as in the vector-unit kernel), quads 8-15 from sub-block 2c + 1 (the
// high nibbles). Every product fits a byte (≤ 31 × 7), so the tiles sum, over a whole
// super-block, Σ_j (scale_j & 7)·dot_j and Σ_j (scale_j >> 3)·dot_j, and
// low + 8 · high = Σ_j scale_j · dot_j: the vector units' integer sum, with no multiply per
// sub-block and token.
template <bool kFifthBit>
void unpack_group(const uint8_t* grp, int64_t nb, uint8_t* panel) {
  constexpr int64_t kSb = static_cast<int64_t>(kFifthBit ? kQ5KSuperBlockBytes : kQ4KSuperBlockBytes);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* sb = grp + s * kSb;
    for (int c = 0; c < 4; ++c) {
      const __m128i high_shift = _mm_cvtsi32_si128(2 * c);
      __m512i sl_lo, sl_hi, sh_lo, sh_hi;
      scale_parts(sb, 2 * c, &sl_lo, &sl_hi);
      scale_parts(sb, 2 * c + 1, &sh_lo, &sh_hi);
      uint8_t* lo = panel + (s * 4 + c) * 2 * kTile;
      uint8_t* hi = lo + kTile;
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const __m512i x = _mm512_load_si512(sb + 64 * (8 * c + i));
        __m512i wl = _mm512_and_si512(x, m4);
        __m512i wh = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
        if constexpr (kFifthBit) {
          const __m512i h = _mm512_srl_epi16(_mm512_load_si512(sb + kHigh + 64 * i), high_shift);
          wl = _mm512_ternarylogic_epi32(wl, _mm512_slli_epi16(h, 4), m10, 0xF8);
          wh = _mm512_ternarylogic_epi32(wh, _mm512_slli_epi16(h, 3), m10, 0xF8);
        }
        _mm512_store_si512(lo + 64 * i, _mm512_mullo_epi16(wl, sl_lo));
        _mm512_store_si512(lo + 64 * (8 + i), _mm512_mullo_epi16(wh, sh_lo));
        _mm512_store_si512(hi + 64 * i, _mm512_mullo_epi16(wl, sl_hi));
        _mm512_store_si512(hi + 64 * (8 + i), _mm512_mullo_epi16(wh, sh_hi));
      }
    }
  }
}

// One 16-row group × G groups of 16 tokens (G = 1 or 2; ntok tokens in all, the rest padding)
// over all nb super-blocks. a: the first token group's A tiles (the second's follow at a_stride);
// b: the unpacked panel; grp: the packed group (mins, d). Per super-block four chunks accumulate
// into the result tiles; the vector units then combine low + 8 · high and take the float step.
// Software pipelined by one super-block: its results are stored to one half of cbuf while the
// vector units finish the previous one from the other half (tile stores do not forward to loads).
template <bool kFifthBit, int G>
void group_product(const uint8_t* grp, int64_t nb, const uint8_t* a, int64_t a_stride, const uint8_t* b,
                   const BlockQ8_K* const* acts, const int32_t* mins, int64_t mins_stride, float* y, int64_t ldy,
                   int ntok, __mmask16 rmask) {
  constexpr int64_t kSb = static_cast<int64_t>(kFifthBit ? kQ5KSuperBlockBytes : kQ4KSuperBlockBytes);
  alignas(64) int32_t cbuf[2][G * 2 * 256];  // per half: group g's low part at 512 g, high at 512 g + 256
  alignas(64) float accf[G * kRows * 16];
  for (int t = 0; t < ntok; ++t) _mm512_store_ps(accf + 16 * t, _mm512_setzero_ps());
  // The float step of super-block s: the vector-unit kernel's (vnni::q4_K_apply).
  auto finish = [&](int64_t s) {
    const vnni::Q4KStep st = vnni::q4_K_step(grp + s * kSb);
    for (int t = 0; t < ntok; ++t) {
      const int32_t* cb = cbuf[s & 1] + 512 * (t / kRows) + 16 * (t % kRows);
      const __m512i isum = _mm512_add_epi32(_mm512_load_si512(cb), _mm512_slli_epi32(_mm512_load_si512(cb + 256), 3));
      _mm512_store_ps(accf + 16 * t,
                      vnni::q4_K_apply(st, _mm512_load_ps(accf + 16 * t), isum, mins + t * mins_stride + s * 4,
                                       acts[t][s].d));
    }
  };
  for (int64_t s = 0; s < nb; ++s) {
    TANDEM_TILE_ZERO(0);
    TANDEM_TILE_ZERO(1);
    if constexpr (G == 2) {
      TANDEM_TILE_ZERO(2);
      TANDEM_TILE_ZERO(3);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const int64_t q = s * 4 + c;
      TANDEM_TILE_LOAD(4, a + q * kTile, 64);
      TANDEM_TILE_LOAD(6, b + q * 2 * kTile, 64);
      TANDEM_TILE_DPBSUD(0, 4, 6);
      TANDEM_TILE_LOAD(7, b + (q * 2 + 1) * kTile, 64);
      TANDEM_TILE_DPBSUD(1, 4, 7);
      if constexpr (G == 2) {
        TANDEM_TILE_LOAD(5, a + a_stride + q * kTile, 64);
        TANDEM_TILE_DPBSUD(2, 5, 6);
        TANDEM_TILE_DPBSUD(3, 5, 7);
      }
    }
    if (s > 0) finish(s - 1);
    int32_t* cb = cbuf[s & 1];
    TANDEM_TILE_STORE(0, cb, 64);
    TANDEM_TILE_STORE(1, cb + 256, 64);
    if constexpr (G == 2) {
      TANDEM_TILE_STORE(2, cb + 512, 64);
      TANDEM_TILE_STORE(3, cb + 768, 64);
    }
  }
  finish(nb - 1);
  for (int t = 0; t < ntok; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, _mm512_load_ps(accf + 16 * t));
}

// For each 16-row group of rows [r0, r1) (r0 a multiple of 16): unpack(group) into the panel, then
// product(group, first row, row mask) over the token groups; the tiles configured around it.
template <class Unpack, class Product>
void for_row_groups(const uint8_t* packed, size_t group_bytes, int64_t r0, int64_t r1, Unpack&& unpack,
                    Product&& product) {
  config_tiles();
  for (int64_t o0 = r0; o0 < r1; o0 += kRows) {
    const int64_t left = r1 - o0;
    const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    const uint8_t* grp = packed + static_cast<size_t>(o0 / kRows) * group_bytes;
    unpack(grp);
    product(grp, o0, rmask);
  }
  release_tiles();
}

template <bool kFifthBit>
void gemm(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const uint8_t* tiles,
          const BlockQ8_K* const* acts, const int32_t* mins, int64_t T, float* y, int64_t ldy, uint8_t* panel) {
  const int64_t nb = n / kQK_K, nq = n / kChunk, groups = (T + kRows - 1) / kRows;
  for_row_groups(
      packed, packed_group_bytes(kFifthBit ? GgmlType::Q5_K : GgmlType::Q4_K, n), r0, r1,
      [&](const uint8_t* grp) { unpack_group<kFifthBit>(grp, nb, panel); },
      [&](const uint8_t* grp, int64_t o0, __mmask16 rmask) {
        for (int64_t g = 0; g < groups; g += 2) {  // token groups in pairs: each weight tile load serves two
          const int64_t t0 = g * kRows;
          const int ntok = static_cast<int>(T - t0 < 2 * kRows ? T - t0 : 2 * kRows);
          const uint8_t* a = tiles + g * nq * kTile;
          float* yg = y + t0 * ldy + o0;
          const int32_t* mg = mins + t0 * (n / 64);
          if (g + 1 < groups)
            group_product<kFifthBit, 2>(grp, nb, a, nq * kTile, panel, acts + t0, mg, n / 64, yg, ldy, ntok, rmask);
          else
            group_product<kFifthBit, 1>(grp, nb, a, 0, panel, acts + t0, mg, n / 64, yg, ldy, ntok, rmask);
        }
      });
}

// ---- Q6_K ----
// A Q6_K sub-block (16 elements) has a signed 8-bit scale; the codes are value + 32. The weight
// tiles hold the signed values (code − 32, in [−32, 31]) times the scale's digits in balanced base
// 8, scale = d0 + 8·d1 + 64·d2 with each d in [−3, 4] (so every product, at most 32 · 4, is a
// signed byte): three weight tiles per 64 elements, three result tiles per super-block (TDPBSSD),
// and isum = C0 + 8·C1 + 64·C2 = Σ_j scale_j · Σ (code − 32) · activation: the vector-unit Q6_K
// kernel's integer sum, taken with no multiply per sub-block and token.
constexpr int64_t kQ6Sb = static_cast<int64_t>(kQ6KSuperBlockBytes);
constexpr int64_t kQ6SubBlock = static_cast<int64_t>(kQ6KSubBlockBytes);
constexpr int64_t kQ6Scales = static_cast<int64_t>(kQ6KScalesOffset);

// (x & 0x0F) | (y & 0x30) per byte (as the vector-unit kernel unpacks a code).
inline __m512i q6_code(__m512i x, __m512i y, __m512i m4, __m512i m30) {
  return _mm512_ternarylogic_epi32(_mm512_and_si512(x, m4), y, m30, 0xF8);
}

// Sub-block j's 16 row scales as three balanced base-8 digits, each in both 16-bit halves of
// row o's dword.
inline void q6_digits(const uint8_t* sb, int j, __m512i d[3]) {
  __m512i v = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kQ6Scales + 16 * j)));
  const __m512i three = _mm512_set1_epi32(3), seven = _mm512_set1_epi32(7);
  for (int k = 0; k < 3; ++k) {
    const __m512i digit = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, three), seven), three);
    v = _mm512_srai_epi32(_mm512_sub_epi32(v, digit), 3);
    d[k] = _mm512_or_si512(_mm512_and_si512(digit, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(digit, 16));
  }
}

// Signed bytes w times the per-row digit (both halves of each dword): each byte's product on its
// own (the even bytes sign-extended to 16 bits, the odd ones shifted down), then put back together.
inline __m512i q6_times(__m512i even, __m512i odd, __m512i digit) {
  const __m512i pe = _mm512_mullo_epi16(even, digit), po = _mm512_mullo_epi16(odd, digit);
  return _mm512_ternarylogic_epi32(_mm512_slli_epi16(po, 8), pe, _mm512_set1_epi16(0x00FF), 0xF8);
}

// One 16-row group's weight tiles: per super-block s and chunk c (sub-blocks 4c .. 4c + 3, quads
// 4·(j − 4c) + m), three tiles of (code − 32) × digit k.
void q6_unpack_group(const uint8_t* grp, int64_t nb, uint8_t* panel) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30), k32 = _mm512_set1_epi8(32);
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* sb = grp + s * kQ6Sb;
    for (int j = 0; j < 16; ++j) {
      const uint8_t* line = sb + kQ6SubBlock * j;
      const __m512i A = _mm512_load_si512(line), B = _mm512_load_si512(line + 64), C = _mm512_load_si512(line + 128);
      const __m512i w[4] = {_mm512_sub_epi8(q6_code(A, _mm512_slli_epi16(C, 4), m4, m30), k32),
                            _mm512_sub_epi8(q6_code(_mm512_srli_epi16(A, 4), _mm512_slli_epi16(C, 2), m4, m30), k32),
                            _mm512_sub_epi8(q6_code(B, C, m4, m30), k32),
                            _mm512_sub_epi8(q6_code(_mm512_srli_epi16(B, 4), _mm512_srli_epi16(C, 2), m4, m30), k32)};
      __m512i d[3];
      q6_digits(sb, j, d);
      uint8_t* chunk = panel + (s * 4 + j / 4) * 3 * kTile + 64 * 4 * (j % 4);
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {
        const __m512i even = _mm512_srai_epi16(_mm512_slli_epi16(w[m], 8), 8), odd = _mm512_srai_epi16(w[m], 8);
#pragma GCC unroll 3
        for (int k = 0; k < 3; ++k) _mm512_store_si512(chunk + k * kTile + 64 * m, q6_times(even, odd, d[k]));
      }
    }
  }
}

// One 16-row group × one group of 16 tokens (ntok real): tiles 0-2 the three digit sums, 3 the
// activations, 4-6 the weights. Pipelined by one super-block as the Q4_K product.
void q6_group_product(const uint8_t* grp, int64_t nb, const uint8_t* a, const uint8_t* b,
                      const BlockQ8_K* const* acts, float* y, int64_t ldy, int ntok, __mmask16 rmask) {
  const auto* dsec = reinterpret_cast<const uint16_t*>(grp + nb * kQ6Sb);
  alignas(64) int32_t cbuf[2][3 * 256];
  __m512 acc[kRows];
#pragma GCC unroll 16
  for (int t = 0; t < kRows; ++t) acc[t] = _mm512_setzero_ps();
  auto finish = [&](int64_t s) {
    const int32_t* cb = cbuf[s & 1];
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dsec + 16 * s)));
#pragma GCC unroll 16
    for (int t = 0; t < kRows; ++t) {
      if (t >= ntok) break;
      const __m512i isum = _mm512_add_epi32(
          _mm512_load_si512(cb + 16 * t),
          _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(cb + 256 + 16 * t), 3),
                           _mm512_slli_epi32(_mm512_load_si512(cb + 512 + 16 * t), 6)));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(acts[t][s].d)), acc[t]);
    }
  };
  for (int64_t s = 0; s < nb; ++s) {
    TANDEM_TILE_ZERO(0);
    TANDEM_TILE_ZERO(1);
    TANDEM_TILE_ZERO(2);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const int64_t q = s * 4 + c;
      TANDEM_TILE_LOAD(3, a + q * kTile, 64);
      TANDEM_TILE_LOAD(4, b + q * 3 * kTile, 64);
      TANDEM_TILE_DPBSSD(0, 3, 4);
      TANDEM_TILE_LOAD(5, b + (q * 3 + 1) * kTile, 64);
      TANDEM_TILE_DPBSSD(1, 3, 5);
      TANDEM_TILE_LOAD(6, b + (q * 3 + 2) * kTile, 64);
      TANDEM_TILE_DPBSSD(2, 3, 6);
    }
    if (s > 0) finish(s - 1);
    int32_t* cb = cbuf[s & 1];
    TANDEM_TILE_STORE(0, cb, 64);
    TANDEM_TILE_STORE(1, cb + 256, 64);
    TANDEM_TILE_STORE(2, cb + 512, 64);
  }
  finish(nb - 1);
#pragma GCC unroll 16
  for (int t = 0; t < kRows; ++t)
    if (t < ntok) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

void gemm_q6_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const uint8_t* tiles,
               const BlockQ8_K* const* acts, int64_t T, float* y, int64_t ldy, uint8_t* panel) {
  const int64_t nb = n / kQK_K, nq = n / kChunk, groups = (T + kRows - 1) / kRows;
  for_row_groups(
      packed, packed_group_bytes(GgmlType::Q6_K, n), r0, r1, [&](const uint8_t* grp) { q6_unpack_group(grp, nb, panel); },
      [&](const uint8_t* grp, int64_t o0, __mmask16 rmask) {
        for (int64_t g = 0; g < groups; ++g) {
          const int ntok = static_cast<int>(T - g * kRows < kRows ? T - g * kRows : kRows);
          q6_group_product(grp, nb, tiles + g * nq * kTile, panel, acts + g * kRows, y + g * kRows * ldy + o0, ldy,
                           ntok, rmask);
        }
      });
}

}  // namespace

size_t kquant_tiles_bytes(int64_t n, int64_t T) {
  return static_cast<size_t>((T + kRows - 1) / kRows) * static_cast<size_t>(n / kChunk) * kTile;
}

void kquant_tile_column(const BlockQ8_K* a, int64_t n, int64_t t, uint8_t* tiles) {
  const int64_t nq = n / kChunk, g = t / kRows, r = t % kRows;
  for (int64_t q = 0; q < nq; ++q)
    std::memcpy(tiles + (g * nq + q) * kTile + r * kChunk, a[q / 4].qs + (q % 4) * kChunk, kChunk);
}

void kquant_pad_tiles(int64_t n, int64_t T, uint8_t* tiles) {
  const int64_t nq = n / kChunk, g = T / kRows;
  if (T % kRows == 0) return;
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t r = T % kRows; r < kRows; ++r) std::memset(tiles + (g * nq + q) * kTile + r * kChunk, 0, kChunk);
}

size_t kquant_panel_bytes(int64_t n) { return static_cast<size_t>(n / kChunk) * 3 * kTile; }  // Q6_K: three tiles a chunk

void gemm_packed_kquant_tiles(GgmlType type, const uint8_t* packed, int64_t n, int64_t r0, int64_t r1,
                              const uint8_t* tiles, const BlockQ8_K* const* acts, const int32_t* mins, int64_t T,
                              float* y, int64_t ldy, uint8_t* panel) {
  if (type == GgmlType::Q6_K) gemm_q6_K(packed, n, r0, r1, tiles, acts, T, y, ldy, panel);
  else if (type == GgmlType::Q5_K) gemm<true>(packed, n, r0, r1, tiles, acts, mins, T, y, ldy, panel);
  else gemm<false>(packed, n, r0, r1, tiles, acts, mins, T, y, ldy, panel);
}

}  // namespace tandem::kernels::amx
