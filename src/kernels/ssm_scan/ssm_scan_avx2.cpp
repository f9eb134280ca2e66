// Compiled with -mavx2 -mfma (CMakeLists.txt); nothing with external linkage but the header's.
#include "kernels/ssm_scan/ssm_scan_avx2.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {
namespace {

// Keeps a product from being fused into the following add (see ssm_scan_avx512.cpp).
inline __m256 opaque(__m256 v) {
  asm("" : "+x"(v));
  return v;
}

}  // namespace

// Head-outer (one head's state stays in L1 for all its tokens), token, row p, 8 state entries
// per register: the reference's mul, mul, add for the state, Σ S·C in two vector accumulators.
void ssm_scan(const SsmScanInput& in, float* state, float* ws) {
  const int P = in.P, ds = in.ds;
  float* dts = ws;
  float* dAs = ws + in.T;
  const int64_t hf = static_cast<int64_t>(P) * ds;
  const int hpg = in.H / in.ng;
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    for (int64_t t = 0; t < in.T; ++t) {
      const float u = in.dt[t * in.lddt + h] + in.dt_bias[h];
      dts[t] = u > 20.0f ? u : logf(1.0f + expf(u));
      dAs[t] = expf(dts[t] * in.A[h]);
    }
    const int g = h / hpg;
    const float Dh = in.D[h];
    float* Sh = state + h * hf;
    for (int64_t t = 0; t < in.T; ++t) {
      const float* Bt = in.B + t * in.ldbc + static_cast<int64_t>(g) * ds;
      const float* Ct = in.C + t * in.ldbc + static_cast<int64_t>(g) * ds;
      const float* x = in.x + t * in.ldx + static_cast<int64_t>(h) * P;
      float* y = in.y + t * in.ldy + static_cast<int64_t>(h) * P;
      const __m256 vdA = _mm256_set1_ps(dAs[t]);
      for (int p = 0; p < P; ++p) {
        float* srow = Sh + static_cast<int64_t>(p) * ds;
        const __m256 vxdt = _mm256_set1_ps(x[p] * dts[t]);
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        for (int k = 0; k < ds / 8; ++k) {
          const __m256 v = _mm256_add_ps(opaque(_mm256_mul_ps(_mm256_loadu_ps(srow + 8 * k), vdA)),
                                         opaque(_mm256_mul_ps(_mm256_loadu_ps(Bt + 8 * k), vxdt)));
          _mm256_storeu_ps(srow + 8 * k, v);
          if (k % 2 == 0)
            acc0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(Ct + 8 * k), acc0);
          else
            acc1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(Ct + 8 * k), acc1);
        }
        y[p] = hsum8(_mm256_add_ps(acc0, acc1)) + x[p] * Dh;
      }
    }
  }
}

}  // namespace tandem::kernels::avx2
