// The AVX-512 bodies of the elementwise products (elementwise.cpp) and the table GELU (gelu.cpp).
// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/elementwise/elementwise_avx512.h"

#include <math.h>

#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::avx512 {

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_mul_ps(silu_ps(_mm512_loadu_ps(g + i)), _mm512_loadu_ps(u + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(silu_ps(_mm512_maskz_loadu_ps(m, g + i)), _mm512_maskz_loadu_ps(m, u + i)));
  }
}

void mul_silu(float* x, const float* z, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), silu_ps(_mm512_loadu_ps(z + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), silu_ps(_mm512_maskz_loadu_ps(m, z + i))));
  }
}

void mul_sigmoid(float* x, const float* z, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  auto gate = [&](__m512 v) { return _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), v)))); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), gate(_mm512_loadu_ps(z + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), gate(_mm512_maskz_loadu_ps(m, z + i))));
  }
}

void gelu_table(const float* table, const float* x, float* y, int64_t n) {
  const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ), r, _mm512_setzero_ps());
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GE_OQ), r, v);
    _mm512_storeu_ps(y + i, r);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f) y[i] = 0.0f;
    else if (v >= 10.0f) y[i] = v;
    else {
      const __m128i h = _mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      y[i] = table[static_cast<uint16_t>(_mm_extract_epi16(h, 0))];
    }
  }
}

}  // namespace tandem::kernels::avx512
