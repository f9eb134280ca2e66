#include "kernels/matmul/matmul_kquant_vnni.h"

#include <immintrin.h>

#include "kernels/matmul/packed_groups_avx512.h"
#include "kernels/simd/simd_avx512.h"
#include "kernels/matmul/weight_pack.h"

// GCC 12 reports the undefined first operand of AVX-512 intrinsics' masked forms as maybe
// uninitialised (as in the other AVX-512 kernel files).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::vnni {
namespace {

using avx512::dpbusd_bcast;

constexpr int64_t kScales = static_cast<int64_t>(kQ4KScalesOffset);
constexpr int64_t kHigh = static_cast<int64_t>(kQ5KHighOffset);

// NC tokens × one 16-row group. With one or two tokens each sub-block's eight VPDPBUSD run as
// two chains of four (integer sums: the order does not matter), so the units are not left
// waiting on one 8-deep chain; with three or four tokens there are enough chains already.
// kFifthBit: Q5_K, whose code line 8c + i takes bits 2c and 2c + 1 of high-bit line i as the
// fifth bit (16) of its low and high nibbles; codes reach 31, the products still fit VPDPBUSD.
template <int NC, bool kFifthBit>
void q4_K_group(const uint8_t* grp, int64_t nb, const BlockQ8_K* const* a, const int32_t* mins, float* y,
                int64_t ldy, __mmask16 rmask) {
  constexpr int64_t kSb = static_cast<int64_t>(kFifthBit ? kQ5KSuperBlockBytes : kQ4KSuperBlockBytes);
  // Bytes ahead of the line being read that the stream prefetch asks for, as in the packed
  // Q6_K kernel: two super-blocks (~4.7 KB for Q4_K) into L1, four (~9.5 KB) into L2 only.
  constexpr int64_t kPrefetchBytes = 2 * kSb;
  constexpr int64_t kL2PrefetchBytes = 4 * kSb;
  constexpr int kChains = NC <= 2 ? 2 : 1;
  const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
  __m512 acc[NC];
#pragma GCC unroll 4
  for (int t = 0; t < NC; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* sb = grp + s * kSb;
    __m512i isum[NC];
#pragma GCC unroll 4
    for (int t = 0; t < NC; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 1
    for (int c = 0; c < 4; ++c) {
      const __m128i high_shift = _mm_cvtsi32_si128(2 * c);
      __m512i lo[NC][kChains], hi[NC][kChains];
#pragma GCC unroll 4
      for (int t = 0; t < NC; ++t)
        for (int k = 0; k < kChains; ++k) lo[t][k] = hi[t][k] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const uint8_t* line = sb + 64 * (8 * c + i);
        _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchBytes), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(line + kL2PrefetchBytes), _MM_HINT_T1);
        if (c == 0 && i < 5) {  // the scales, mins and d lines after the codes
          _mm_prefetch(reinterpret_cast<const char*>(sb + kScales + 64 * i + kPrefetchBytes), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(sb + kScales + 64 * i + kL2PrefetchBytes), _MM_HINT_T1);
        }
        const __m512i x = _mm512_load_si512(line);
        __m512i wl = _mm512_and_si512(x, m4);                         // sub-block 2c, codes 4i ..
        __m512i wh = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);  // sub-block 2c + 1
        if constexpr (kFifthBit) {
          if (c == 1) {
            _mm_prefetch(reinterpret_cast<const char*>(sb + kHigh + 64 * i + kPrefetchBytes), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(sb + kHigh + 64 * i + kL2PrefetchBytes), _MM_HINT_T1);
          }
          // Bits 2c and 2c + 1 of each byte to bit 0 and 1, then each to bit 4 (a | (b & c)).
          const __m512i h = _mm512_srl_epi16(_mm512_load_si512(sb + kHigh + 64 * i), high_shift);
          wl = _mm512_ternarylogic_epi32(wl, _mm512_slli_epi16(h, 4), m10, 0xF8);
          wh = _mm512_ternarylogic_epi32(wh, _mm512_slli_epi16(h, 3), m10, 0xF8);
        }
#pragma GCC unroll 4
        for (int t = 0; t < NC; ++t) {
          const auto* q = reinterpret_cast<const int32_t*>(a[t][s].qs) + 16 * c;
          dpbusd_bcast(lo[t][i % kChains], wl, q + i);
          dpbusd_bcast(hi[t][i % kChains], wh, q + 8 + i);
        }
      }
      const __m512i sl = scale_pairs(
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kScales + 32 * c))));
      const __m512i sh = scale_pairs(
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kScales + 32 * c + 16))));
#pragma GCC unroll 4
      for (int t = 0; t < NC; ++t) {
        // The two sub-blocks' sums (|sum| <= 32 · 31 · 128 < 2^17) times their scales (0 .. 63).
        const __m512i l = kChains == 2 ? _mm512_add_epi32(lo[t][0], lo[t][kChains - 1]) : lo[t][0];
        const __m512i h = kChains == 2 ? _mm512_add_epi32(hi[t][0], hi[t][kChains - 1]) : hi[t][0];
        isum[t] = add_scaled(add_scaled(isum[t], l, sl), h, sh);
      }
    }
    const Q4KStep st = q4_K_step(sb);
#pragma GCC unroll 4
    for (int t = 0; t < NC; ++t) acc[t] = q4_K_apply(st, acc[t], isum[t], mins + (t * nb + s) * 4, a[t][s].d);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NC; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

template <bool kFifthBit>
void gemm_packed(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                 const int32_t* mins, int64_t T, float* y, int64_t ldy) {
  const int64_t nb = n / kQK_K;
  for_packed_groups<kQ4KMaxCols>(
      packed, packed_group_bytes(kFifthBit ? GgmlType::Q5_K : GgmlType::Q4_K, n), r0, r1, T, y, ldy,
      [&](auto nc, const uint8_t* grp, int64_t c0, float* yc, __mmask16 rmask) {
        q4_K_group<decltype(nc)::value, kFifthBit>(grp, nb, acts + c0, mins + c0 * nb * 4, yc, ldy, rmask);
      });
}

}  // namespace

void q4_K_min_operands(const BlockQ8_K* a, int64_t n, int32_t* out) {
  for (int64_t s = 0; s < n / kQK_K; ++s)
    for (int p = 0; p < 4; ++p) {
      const int32_t lo = a[s].bsums[4 * p] + a[s].bsums[4 * p + 1];      // sub-block 2p
      const int32_t hi = a[s].bsums[4 * p + 2] + a[s].bsums[4 * p + 3];  // sub-block 2p + 1
      out[4 * s + p] = static_cast<int32_t>((static_cast<uint32_t>(hi) << 16) | (static_cast<uint32_t>(lo) & 0xFFFFu));
    }
}

void gemm_packed_q4_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* mins, int64_t T, float* y, int64_t ldy) {
  gemm_packed<false>(packed, n, r0, r1, acts, mins, T, y, ldy);
}

void gemm_packed_q5_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* mins, int64_t T, float* y, int64_t ldy) {
  gemm_packed<true>(packed, n, r0, r1, acts, mins, T, y, ldy);
}

}  // namespace tandem::kernels::vnni
