// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt). As in matmul_avx2.cpp, nothing here has
// external linkage but the entry points of the header, and no library inline code is used.
#include "kernels/matmul/matmul_packed_avx2.h"

#include <immintrin.h>

#include <cstddef>

#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {
namespace {

constexpr int kGroupRows = 16;
constexpr int kHalfRows = 8;
constexpr int64_t kQ4BlockBytes = 256;  // 16 rows × 32 codes as nibbles: four 64-byte lines
constexpr int kMaxTokens = 4;           // tokens per pass over a half-group's blocks

// Rows [8h, 8h + 8) of one 16-row group times NC tokens; `rows` of them are stored. Token t's
// block b is at act + t · act_row + b · 34; its terms at sums[b · T + t], scales[b · T + t]
// (block-major, so one pointer each walks the blocks: few general registers, no spills).
template <int NC>
void half_group(const uint8_t* grp, int64_t nb, int h, const uint8_t* act, size_t act_row, const int32_t* sums,
                const float* scales, int64_t T, float* y, int64_t ldy, int rows) {
  const auto* dsec = reinterpret_cast<const uint16_t*>(grp + nb * kQ4BlockBytes);
  const __m256i m4 = _mm256_set1_epi8(0x0F), flip = _mm256_set1_epi8(static_cast<char>(0x88));
  __m256 acc[NC];
  for (int t = 0; t < NC; ++t) acc[t] = _mm256_setzero_ps();
  const uint8_t* in = grp + 32 * h;
  const int8_t* qs = reinterpret_cast<const int8_t*>(act) + offsetof(BlockQ8_0, qs);
  for (int64_t b = 0; b < nb; ++b, in += kQ4BlockBytes, qs += sizeof(BlockQ8_0), sums += T, scales += T) {
    __m256i s16[NC];
    for (int l = 0; l < 4; ++l) {
      // Line l: low nibbles are codes 4l .. 4l + 3 of each row, high nibbles 16 + 4l ..; stored
      // as (q XOR 8), so XOR 0x88 gives the file's unsigned codes q (value q − 8).
      const __m256i x = _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(in + 64 * l)), flip);
      const __m256i lo = _mm256_and_si256(x, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
      for (int t = 0; t < NC; ++t) {
        const int8_t* q = qs + t * act_row;
        const __m256i p = _mm256_maddubs_epi16(lo, bcast4(q + 4 * l));
        s16[t] = l == 0 ? p : _mm256_add_epi16(s16[t], p);
        s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(hi, bcast4(q + 16 + 4 * l)));
        // Keeps each token's sum a running chain: left alone, GCC re-associates the 8 adds into a
        // tree after all 8 · NC products, which then no longer fit in the 16 registers (spills).
        asm("" : "+x"(s16[t]));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dsec + kGroupRows * b + 8 * h)));
    for (int t = 0; t < NC; ++t) {
      const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(s16[t], _mm256_set1_epi16(1)), _mm256_set1_epi32(sums[t]));
      const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(scales[t]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc[t]);
    }
  }
  if (rows == kHalfRows) {
    for (int t = 0; t < NC; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
    return;
  }
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int t = 0; t < NC; ++t) _mm256_maskstore_ps(y + t * ldy, mask, acc[t]);
}

// Q6_K (weight_pack.h's Q6_K interleave): per super-block s of 256 elements and sub-block j
// of 16, lines A, B, C hold 4 code quads of 16 rows; half h is bytes [32h, 32h + 32) of each.
constexpr int64_t kQ6Sb = 3328;        // kQ6KSuperBlockBytes
constexpr int64_t kQ6SubBytes = 192;   // kQ6KSubBlockBytes
constexpr int64_t kQ6Scales = 3072;    // kQ6KScalesOffset
constexpr int kQ6SubBlocks = 16;

// (x & 0x0F) | (y & 0x30) per byte: a code's low nibble from x, its high two bits already at
// bits 4-5 of y.
__m256i q6_code(__m256i x, __m256i y, __m256i m4, __m256i m30) {
  return _mm256_or_si256(_mm256_and_si256(x, m4), _mm256_and_si256(y, m30));
}

// Rows [8h, 8h + 8) of one Q6_K group times NC tokens, sub-blocks in pairs. Per sub-block and
// token: two int16 sums of two VPMADDUBSW each (codes 0..63 against the token's codes in
// −128..127: |pair| <= 2 · 63 · 128, two pairs < 32768), each multiplied by the row's sub-block
// scale in VPMADDWD; per pair of sub-blocks the codes' offset, −32 · (s_j · bsum_j + s_j+1 ·
// bsum_j+1), as one VPMADDWD of the scales times −32 (|.| <= 4096: int16) against the token's
// two bsums. That is the integer super-block sum of the AVX-512 packed kernel, and then the
// same FMA per super-block: the same bits.
template <int NC>
void q6_K_half(const uint8_t* grp, int64_t nb, int h, const uint8_t* act, size_t act_row, float* y, int64_t ldy,
               int rows) {
  const auto* dsec = reinterpret_cast<const uint16_t*>(grp + nb * kQ6Sb);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m256 acc[NC];
  for (int t = 0; t < NC; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* sb = grp + s * kQ6Sb;
    const auto* blk = reinterpret_cast<const BlockQ8_K*>(act) + s;  // token t's: at t · act_row bytes
    __m256i isum[NC];
    for (int t = 0; t < NC; ++t) isum[t] = _mm256_setzero_si256();
    for (int pr = 0; pr < kQ6SubBlocks / 2; ++pr) {
      const __m128i s0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb + kQ6Scales + 32 * pr + 8 * h));
      const __m128i s1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sb + kQ6Scales + 32 * pr + 16 + 8 * h));
      // Row o's scales of sub-blocks 2pr and 2pr + 1 in int16 lanes 2o, 2o + 1, times −32.
      const __m256i neg32 = _mm256_sub_epi16(_mm256_setzero_si256(),
                                             _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s0, s1)), 5));
      for (int t = 0; t < NC; ++t) {
        int32_t bs;
        __builtin_memcpy(&bs, reinterpret_cast<const BlockQ8_K*>(reinterpret_cast<const uint8_t*>(blk) + t * act_row)
                                  ->bsums + 2 * pr, 4);
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(neg32, _mm256_set1_epi32(bs)));
      }
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * pr + jj;
        const uint8_t* line = sb + kQ6SubBytes * j + 32 * h;
        const __m256i A = _mm256_load_si256(reinterpret_cast<const __m256i*>(line));
        const __m256i B = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 64));
        const __m256i C = _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 128));
        const __m256i c0 = q6_code(A, _mm256_slli_epi16(C, 4), m4, m30);
        const __m256i c1 = q6_code(_mm256_srli_epi16(A, 4), _mm256_slli_epi16(C, 2), m4, m30);
        const __m256i c2 = q6_code(B, C, m4, m30);
        const __m256i c3 = q6_code(_mm256_srli_epi16(B, 4), _mm256_srli_epi16(C, 2), m4, m30);
        // Row o's scale of sub-block j in int16 lanes 2o and 2o + 1.
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(jj == 0 ? s0 : s1, dup));
        for (int t = 0; t < NC; ++t) {
          const int8_t* q =
              reinterpret_cast<const BlockQ8_K*>(reinterpret_cast<const uint8_t*>(blk) + t * act_row)->qs + 16 * j;
          const __m256i p01 =
              _mm256_add_epi16(_mm256_maddubs_epi16(c0, bcast4(q)), _mm256_maddubs_epi16(c1, bcast4(q + 4)));
          const __m256i p23 =
              _mm256_add_epi16(_mm256_maddubs_epi16(c2, bcast4(q + 8)), _mm256_maddubs_epi16(c3, bcast4(q + 12)));
          isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(p01, sc), _mm256_madd_epi16(p23, sc)));
          asm("" : "+x"(isum[t]));  // one running sum per token (see half_group)
        }
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dsec + kGroupRows * s + 8 * h)));
    for (int t = 0; t < NC; ++t) {
      const float da = reinterpret_cast<const BlockQ8_K*>(reinterpret_cast<const uint8_t*>(blk) + t * act_row)->d;
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(dw, _mm256_set1_ps(da)), acc[t]);
    }
  }
  if (rows == kHalfRows) {
    for (int t = 0; t < NC; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);
    return;
  }
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int t = 0; t < NC; ++t) _mm256_maskstore_ps(y + t * ldy, mask, acc[t]);
}

template <int N>
struct Tokens {
  static constexpr int value = N;
};

// Every 8-row half of the 16-row groups of rows [0, nr), and within it the tokens in chunks of up
// to kMaxTokens: half(Tokens<nc>, group, h, first token, its output, rows stored). A half-group's
// blocks (a few KB) stay in L1 while every token chunk reuses them.
template <typename Half>
void for_half_groups(const uint8_t* packed, size_t group_bytes, int64_t nr, int64_t T, float* y, int64_t ldy,
                     Half&& half) {
  for (int64_t o0 = 0; o0 < nr; o0 += kGroupRows) {
    const uint8_t* grp = packed + static_cast<size_t>(o0 / kGroupRows) * group_bytes;
    for (int h = 0; h < 2; ++h) {
      const int64_t left = nr - o0 - kHalfRows * h;
      if (left <= 0) break;
      const int rows = left >= kHalfRows ? kHalfRows : static_cast<int>(left);
      for (int64_t c0 = 0; c0 < T; c0 += kMaxTokens) {
        float* yc = y + c0 * ldy + o0 + kHalfRows * h;
        switch (T - c0 < kMaxTokens ? T - c0 : kMaxTokens) {
          case 1: half(Tokens<1>{}, grp, h, c0, yc, rows); break;
          case 2: half(Tokens<2>{}, grp, h, c0, yc, rows); break;
          case 3: half(Tokens<3>{}, grp, h, c0, yc, rows); break;
          default: half(Tokens<4>{}, grp, h, c0, yc, rows); break;
        }
      }
    }
  }
}

}  // namespace

void q4_0_packed_terms(const BlockQ8_0* a, int64_t nb, int64_t stride, int32_t* sums, float* scales) {
  for (int64_t b = 0; b < nb; ++b) {
    int32_t s = 0;
    for (int i = 0; i < 32; ++i) s += a[b].qs[i];
    sums[b * stride] = -8 * s;
    scales[b * stride] = _cvtsh_ss(a[b].d);
  }
}

void gemm_packed_q4_0(const uint8_t* packed, size_t group_bytes, int64_t n, int64_t nr, const uint8_t* act,
                      size_t act_row, const int32_t* sums, const float* scales, int64_t T, float* y, int64_t ldy) {
  const int64_t nb = n / 32;
  for_half_groups(packed, group_bytes, nr, T, y, ldy, [&](auto nc, const uint8_t* grp, int h, int64_t c0, float* yc,
                                                          int rows) {
    half_group<decltype(nc)::value>(grp, nb, h, act + static_cast<size_t>(c0) * act_row, act_row, sums + c0,
                                    scales + c0, T, yc, ldy, rows);
  });
}

void gemm_packed_q6_K(const uint8_t* packed, size_t group_bytes, int64_t n, int64_t nr, const uint8_t* act,
                      size_t act_row, int64_t T, float* y, int64_t ldy) {
  const int64_t nb = n / 256;
  for_half_groups(packed, group_bytes, nr, T, y, ldy, [&](auto nc, const uint8_t* grp, int h, int64_t c0, float* yc,
                                                          int rows) {
    q6_K_half<decltype(nc)::value>(grp, nb, h, act + static_cast<size_t>(c0) * act_row, act_row, yc, ldy, rows);
  });
}

}  // namespace tandem::kernels::avx2
