// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/attention/softmax_avx512.h"

#include <math.h>

#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_max_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::avx512 {

void softmax_scaled(float* x, int64_t n, float scale) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + j), vs);
    _mm512_storeu_ps(x + j, v);
    vmax = _mm512_max_ps(vmax, v);
  }
  float mx = _mm512_reduce_max_ps(vmax);
  for (; j < n; ++j) {
    x[j] *= scale;
    mx = x[j] > mx ? x[j] : mx;
  }
  // Sixteen float partial sums of at most n / 16 terms each (all in (0, 1]), added in double.
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 acc = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm));
    _mm512_storeu_ps(x + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  double sum = 0.0;
  for (float l : lanes) sum += static_cast<double>(l);
  for (; j < n; ++j) {
    x[j] = expf(x[j] - mx);
    sum += static_cast<double>(x[j]);
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), inv));
  const float invs = static_cast<float>(1.0 / sum);
  for (; j < n; ++j) x[j] *= invs;
}

}  // namespace tandem::kernels::avx512
