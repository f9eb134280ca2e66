// Compiled with -mavx2 -mfma (CMakeLists.txt); nothing with external linkage but the header's.
#include "kernels/delta_rule/delta_rule_avx2.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {

void delta_rule_recurrent(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  const int d = in.d;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const int64_t sf = in.state_floats();
  const size_t head_bytes = static_cast<size_t>(d) * d * sizeof(float);
  // Head-outer: a head's d x d state stays in cache for all its tokens.
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    const int kh = h % in.H_k;
    float* S = state + static_cast<int64_t>(h) * d * d;
    // The first token reads the state before the batch from state_in when given (no copy).
    const float* src = in.state_in ? in.state_in + static_cast<int64_t>(h) * d * d : S;
    for (int64_t t = 0; t < in.T; ++t) {
      const float* q = in.q + t * in.ldqk + kh * d;
      const float* k = in.k + t * in.ldqk + kh * d;
      const float* v = in.v + t * in.ldv + h * d;
      const __m256 decay = _mm256_set1_ps(expf(in.g[t * in.H_v + h]));
      const float beta = in.beta[t * in.H_v + h];
      float* o = in.out + t * in.ldo + h * d;
      for (int j = 0; j < d; ++j) {
        const float* row = src + static_cast<int64_t>(j) * d;  // S[.][j] over the key index
        float* dst = S + static_cast<int64_t>(j) * d;
        // Two accumulators per sum: the FMA chains are half as long.
        __m256 kv0 = _mm256_setzero_ps(), kv1 = _mm256_setzero_ps();
        int i = 0;
        for (; i + 16 <= d; i += 16) {
          kv0 = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(row + i), decay), _mm256_loadu_ps(k + i), kv0);
          kv1 = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(row + i + 8), decay), _mm256_loadu_ps(k + i + 8), kv1);
        }
        if (i < d) kv0 = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(row + i), decay), _mm256_loadu_ps(k + i), kv0);
        const __m256 delta = _mm256_set1_ps(beta * (v[j] - hsum8(_mm256_add_ps(kv0, kv1))));
        __m256 qs0 = _mm256_setzero_ps(), qs1 = _mm256_setzero_ps();
        for (i = 0; i + 16 <= d; i += 16) {
          const __m256 r0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), delta, _mm256_mul_ps(_mm256_loadu_ps(row + i), decay));
          const __m256 r1 =
              _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 8), delta, _mm256_mul_ps(_mm256_loadu_ps(row + i + 8), decay));
          _mm256_storeu_ps(dst + i, r0);
          _mm256_storeu_ps(dst + i + 8, r1);
          qs0 = _mm256_fmadd_ps(r0, _mm256_loadu_ps(q + i), qs0);
          qs1 = _mm256_fmadd_ps(r1, _mm256_loadu_ps(q + i + 8), qs1);
        }
        if (i < d) {
          const __m256 r0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), delta, _mm256_mul_ps(_mm256_loadu_ps(row + i), decay));
          _mm256_storeu_ps(dst + i, r0);
          qs0 = _mm256_fmadd_ps(r0, _mm256_loadu_ps(q + i), qs0);
        }
        o[j] = hsum8(_mm256_add_ps(qs0, qs1)) * scale;
      }
      src = S;
      float* snap = in.snapshot_to ? in.snapshot_to[t]
                                   : snapshots && t >= snapshot_from ? snapshots + (t - snapshot_from) * sf : nullptr;
      if (snap) memcpy(snap + static_cast<int64_t>(h) * d * d, S, head_bytes);
    }
    // An empty batch with state_in still hands the state over.
    if (in.T == 0 && in.state_in) memcpy(S, in.state_in + static_cast<int64_t>(h) * d * d, head_bytes);
  }
}

}  // namespace tandem::kernels::avx2
