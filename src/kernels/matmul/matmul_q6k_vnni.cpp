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

constexpr int64_t kSb = static_cast<int64_t>(kQ6KSuperBlockBytes);
constexpr int64_t kSubBlockBytes = static_cast<int64_t>(kQ6KSubBlockBytes);
constexpr int64_t kScales = static_cast<int64_t>(kQ6KScalesOffset);
constexpr int64_t kSubBlocks = kQK_K / 16;
// Bytes ahead of the line being read that the stream prefetch asks for: two 16-row
// super-blocks (~6.6 KB) into L1, past the group's end into the next group, which follows
// it; and three (~10 KB) into L2 only, so that a line is already on its way when the L1
// request comes while four tokens' arithmetic runs (as matmul_amx.cpp's vector-unit stream;
// 151669 x 1024 head, 2 threads, side by side: T = 4 3.78 -> 3.49 and 3.32 -> 3.08 ms).
constexpr int64_t kPrefetchBytes = 2 * kSb;
constexpr int64_t kL2PrefetchBytes = 3 * kSb;

// (x & 0x0F) | (y & 0x30) per byte: the low nibble of a code from x, its two high bits
// already shifted to bits 4-5 in y.
inline __m512i code(__m512i x, __m512i y, __m512i m4, __m512i m30) {
  return _mm512_ternarylogic_epi32(_mm512_and_si512(x, m4), y, m30, 0xF8);  // a | (b & c)
}

// NC tokens × one 16-row group. off[t * nb * 16 + 16 s + j] = −32 · bsum_j of token t's
// super-block s: the integer sum of a sub-block starts there, so the unsigned codes (value +
// 32) give the signed dot product.
template <int NC>
void q6_K_group(const uint8_t* grp, int64_t nb, const BlockQ8_K* const* a, const int32_t* off, float* y, int64_t ldy,
                __mmask16 rmask) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const auto* dsec = reinterpret_cast<const uint16_t*>(grp + nb * kSb);
  __m512 acc[NC];
#pragma GCC unroll 4
  for (int t = 0; t < NC; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < nb; ++s) {
    const uint8_t* sb = grp + s * kSb;
    __m512i isum[NC];
#pragma GCC unroll 4
    for (int t = 0; t < NC; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int j = 0; j < kSubBlocks; ++j) {
      const uint8_t* line = sb + kSubBlockBytes * j;
#pragma GCC unroll 3
      for (int l = 0; l < 3; ++l) _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchBytes + 64 * l), _MM_HINT_T0);
      if (j < 4) _mm_prefetch(reinterpret_cast<const char*>(sb + kPrefetchBytes + kScales + 64 * j), _MM_HINT_T0);
#pragma GCC unroll 3
      for (int l = 0; l < 3; ++l) _mm_prefetch(reinterpret_cast<const char*>(line + kL2PrefetchBytes + 64 * l), _MM_HINT_T1);
      if (j < 4) _mm_prefetch(reinterpret_cast<const char*>(sb + kL2PrefetchBytes + kScales + 64 * j), _MM_HINT_T1);
      const __m512i A = _mm512_load_si512(line), B = _mm512_load_si512(line + 64), C = _mm512_load_si512(line + 128);
      const __m512i c0 = code(A, _mm512_slli_epi16(C, 4), m4, m30);
      const __m512i c1 = code(_mm512_srli_epi16(A, 4), _mm512_slli_epi16(C, 2), m4, m30);
      const __m512i c2 = code(B, C, m4, m30);
      const __m512i c3 = code(_mm512_srli_epi16(B, 4), _mm512_srli_epi16(C, 2), m4, m30);
      const __m512i scale =
          scale_pairs(_mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sb + kScales + 16 * j))));
#pragma GCC unroll 4
      for (int t = 0; t < NC; ++t) {
        const auto* q = reinterpret_cast<const int32_t*>(a[t][s].qs) + 4 * j;
        __m512i dot = _mm512_set1_epi32(off[(t * nb + s) * kSubBlocks + j]);
        dpbusd_bcast(dot, c0, q);
        dpbusd_bcast(dot, c1, q + 1);
        dpbusd_bcast(dot, c2, q + 2);
        dpbusd_bcast(dot, c3, q + 3);
        isum[t] = add_scaled(isum[t], dot, scale);  // + dot · scale (packed_groups_avx512.h)
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dsec + 16 * s)));
#pragma GCC unroll 4
    for (int t = 0; t < NC; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, _mm512_set1_ps(a[t][s].d)), acc[t]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NC; ++t) _mm512_mask_storeu_ps(y + t * ldy, rmask, acc[t]);
}

}  // namespace

void q6_K_offsets(const BlockQ8_K* a, int64_t n, int32_t* out) {
  for (int64_t s = 0; s < n / kQK_K; ++s)
    for (int j = 0; j < kSubBlocks; ++j) out[s * kSubBlocks + j] = -32 * a[s].bsums[j];
}

void gemm_packed_q6_K(const uint8_t* packed, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* acts,
                      const int32_t* offsets, int64_t T, float* y, int64_t ldy) {
  const int64_t nb = n / kQK_K;
  for_packed_groups<kQ6KMaxCols>(
      packed, packed_group_bytes(GgmlType::Q6_K, n), r0, r1, T, y, ldy,
      [&](auto nc, const uint8_t* grp, int64_t c0, float* yc, __mmask16 rmask) {
        q6_K_group<decltype(nc)::value>(grp, nb, acts + c0, offsets + c0 * nb * kSubBlocks, yc, ldy, rmask);
      });
}

}  // namespace tandem::kernels::vnni
