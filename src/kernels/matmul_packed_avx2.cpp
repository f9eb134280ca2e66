// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt). As in matmul_avx2.cpp, nothing here has
// external linkage but the entry points of the header, and no library inline code is used.
#include "kernels/matmul_packed_avx2.h"

#include <immintrin.h>

#include <cstddef>

namespace tandem::kernels::avx2 {
namespace {

constexpr int kGroupRows = 16;
constexpr int kHalfRows = 8;
constexpr int64_t kQ4BlockBytes = 256;  // 16 rows × 32 codes as nibbles: four 64-byte lines
constexpr int kMaxTokens = 4;           // tokens per pass over a half-group's blocks

// The 4 activation codes at p in every 32-bit lane.
__m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

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
  for (int64_t o0 = 0; o0 < nr; o0 += kGroupRows) {
    const uint8_t* grp = packed + static_cast<size_t>(o0 / kGroupRows) * group_bytes;
    for (int h = 0; h < 2; ++h) {
      const int64_t left = nr - o0 - kHalfRows * h;
      if (left <= 0) break;
      const int rows = left >= kHalfRows ? kHalfRows : static_cast<int>(left);
      // The group's blocks (nb × 288 bytes) stay in L1 while every token chunk reuses them.
      for (int64_t c0 = 0; c0 < T; c0 += kMaxTokens) {
        const uint8_t* a = act + static_cast<size_t>(c0) * act_row;
        float* yc = y + c0 * ldy + o0 + kHalfRows * h;
        switch (T - c0 < kMaxTokens ? T - c0 : kMaxTokens) {
          case 1: half_group<1>(grp, nb, h, a, act_row, sums + c0, scales + c0, T, yc, ldy, rows); break;
          case 2: half_group<2>(grp, nb, h, a, act_row, sums + c0, scales + c0, T, yc, ldy, rows); break;
          case 3: half_group<3>(grp, nb, h, a, act_row, sums + c0, scales + c0, T, yc, ldy, rows); break;
          default: half_group<4>(grp, nb, h, a, act_row, sums + c0, scales + c0, T, yc, ldy, rows); break;
        }
      }
    }
  }
}

}  // namespace tandem::kernels::avx2
