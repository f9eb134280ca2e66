// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/activation_quant/activation_quant_avx512.h"

#include <immintrin.h>
#include <string.h>

// GCC 12 warns about the deliberately undefined upper halves inside its own reduction
// intrinsics (_mm512_reduce_max_ps, ...), as in the other AVX-512 files.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::avx512 {

void quantize_q8_K(const float* x, BlockQ8_K* y, int64_t nb) {
  constexpr int kVecs = kQK_K / 16;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    // The largest magnitude (NaNs never win: max_ps returns its second operand when the
    // first is NaN), then its first element, as the scalar loop's strict ">" picks it.
    __m512 am = _mm512_setzero_ps();
    for (int v = 0; v < kVecs; ++v) am = _mm512_max_ps(_mm512_andnot_ps(sign, _mm512_loadu_ps(x + 16 * v)), am);
    const float amax = _mm512_reduce_max_ps(am);
    if (amax == 0.0f) {
      memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0.0f;
    const __m512 vamax = _mm512_set1_ps(amax);
    for (int v = 0; v < kVecs; ++v) {
      const __mmask16 at = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_loadu_ps(x + 16 * v)), vamax, _CMP_EQ_OQ);
      if (at) {
        max = x[16 * v + __builtin_ctz(static_cast<unsigned>(at))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int v = 0; v < kVecs; ++v) {
      const __m512 p = _mm512_mul_ps(vs, _mm512_loadu_ps(x + 16 * v));
      const __mmask16 nan = _mm512_cmp_ps_mask(p, p, _CMP_UNORD_Q);
      // min/max return the second operand for a NaN first one: clamped, then zeroed below.
      const __m512 r = _mm512_roundscale_ps(_mm512_min_ps(_mm512_max_ps(p, lo), hi), _MM_FROUND_TO_NEAREST_INT);
      const __m512i q = _mm512_maskz_cvtps_epi32(static_cast<__mmask16>(~nan), r);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16 * v), _mm512_cvtepi32_epi8(q));
      y[b].bsums[v] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace tandem::kernels::avx512
