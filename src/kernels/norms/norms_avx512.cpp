// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/norms/norms_avx512.h"

#include <immintrin.h>

namespace tandem::kernels::avx512 {

double sum_squares(const float* x, int64_t n) {
  __m512d s = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_mul_ps(v, v)));
  }
  alignas(64) double p[8];
  _mm512_store_pd(p, s);
  double sum = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

}  // namespace tandem::kernels::avx512
