// The loop every packed K-quant kernel on the vector units runs (matmul_q4k_vnni.cpp,
// matmul_q6k_vnni.cpp), and the Q4_K super-block's float step (also the tile kernel's): rows [r0, r1) of a matrix packed in 16-row groups, T tokens. Row
// groups outer, tokens inner in chunks of at most MaxCols: a group stays in L1 while every
// chunk of tokens reuses it, and a chunk's accumulators stay in registers.
//
// Included by AVX-512 translation units only; everything here is static inline.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/matmul/weight_pack.h"

namespace tandem::kernels::vnni {

// isum + dot · s per 32-bit lane, exactly, without VPMULLD: VPMULLD issues at a quarter of the
// rate of VPDPWSSD (tandem_bench_vector_throughput) and these products run once per token and
// sub-block. dot, a sub-block's integer sum, becomes per lane the int16 pair (dot & 0xFF,
// dot >> 8) with one byte shuffle; sp holds the pair (s, 256 · s) (scale_pairs), so VPDPWSSD adds
// s · (dot & 0xFF) + 256 · s · (dot >> 8) = s · dot. Both pairs fit int16: dot >> 8 while
// |dot| < 2^23 (the Q4_K / Q5_K / Q6_K sub-block sums stay below 2^17), 256 · s because the
// scales are 8-bit (−128 · 256 is −32768).
static inline __m512i scale_pairs(__m512i s) {  // s: int32 lanes, −128 .. 127 or 0 .. 127
  return _mm512_or_si512(_mm512_and_si512(s, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(s, 24));
}
static inline __m512i add_scaled(__m512i isum, __m512i dot, __m512i sp) {
  // Per 32-bit lane, bytes (b0, b1, b2, b3) -> (b0, 0, b1, b2): int16 b0, int16 dot >> 8.
  const __m512i split = _mm512_set4_epi32(0x0E0D800C, 0x0A098008, 0x06058004, 0x02018000);
  return _mm512_dpwssd_epi32(isum, _mm512_shuffle_epi8(dot, split), sp);
}

// The float step of one packed Q4_K / Q5_K super-block (weight_pack.h's layout at sb), shared
// by the vector-unit kernel (matmul_q4k_vnni.cpp) and the tile kernel (matmul_kquant_amx.cpp) so
// that both take the same operations in the same order: per token,
//   acc += isum × (d_w · d_a) − (Σ_j m_j · bsum_j) × (dmin_w · d_a),
// the mins sum in int32 (one VPDPWSSD per pair of sub-blocks, mo: the token's four operands).
struct Q4KStep {
  __m512i mn[4];
  __m512 dw, dm;
};
static inline Q4KStep q4_K_step(const uint8_t* sb) {
  Q4KStep st;
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p)
    st.mn[p] = _mm512_cvtepu8_epi16(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kQ4KMinsOffset + 32 * p)));
  st.dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kQ4KDOffset)));
  st.dm = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sb + kQ4KDOffset + 32)));
  return st;
}
static inline __m512 q4_K_apply(const Q4KStep& st, __m512 acc, __m512i isum, const int32_t* mo, float d) {
  __m512i ms = _mm512_dpwssd_epi32(_mm512_setzero_si512(), st.mn[0], _mm512_set1_epi32(mo[0]));
  ms = _mm512_dpwssd_epi32(ms, st.mn[1], _mm512_set1_epi32(mo[1]));
  ms = _mm512_dpwssd_epi32(ms, st.mn[2], _mm512_set1_epi32(mo[2]));
  ms = _mm512_dpwssd_epi32(ms, st.mn[3], _mm512_set1_epi32(mo[3]));
  const __m512 da = _mm512_set1_ps(d);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(st.dw, da), acc);
  return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(st.dm, da), acc);
}

// Calls kernel(std::integral_constant<int, NC>{}, group, c0, output, row mask) for each group
// and each chunk of NC <= MaxCols tokens starting at token c0 (output: y + c0 · ldy + the
// group's first row); MaxCols must be 4.
template <int MaxCols, class Kernel>
static inline void for_packed_groups(const uint8_t* packed, size_t group_bytes, int64_t r0, int64_t r1, int64_t T,
                                     float* y, int64_t ldy, Kernel&& kernel) {
  static_assert(MaxCols == 4, "chunks of 1 .. 4 tokens are instantiated");
  for (int64_t o0 = r0; o0 < r1; o0 += 16) {
    const int64_t left = r1 - o0;
    const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    const uint8_t* grp = packed + static_cast<size_t>(o0 / 16) * group_bytes;
    for (int64_t c0 = 0; c0 < T; c0 += MaxCols) {
      float* yc = y + c0 * ldy + o0;
      switch (T - c0 < MaxCols ? T - c0 : MaxCols) {
        case 1: kernel(std::integral_constant<int, 1>{}, grp, c0, yc, rmask); break;
        case 2: kernel(std::integral_constant<int, 2>{}, grp, c0, yc, rmask); break;
        case 3: kernel(std::integral_constant<int, 3>{}, grp, c0, yc, rmask); break;
        default: kernel(std::integral_constant<int, 4>{}, grp, c0, yc, rmask); break;
      }
    }
  }
}

}  // namespace tandem::kernels::vnni
