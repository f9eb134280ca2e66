// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/attention_avx512.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/simd_avx512.h"

namespace tandem::kernels::avx512 {

void attention_causal(int n_head, int n_head_kv, int hd, int64_t T, int64_t pos0, float scale, const float* q,
                      int64_t ldq, const float* k_cache, const float* v_cache, int64_t kv_stride, float* out,
                      int64_t ldo, float* scores) {
  const int group = n_head / n_head_kv;
  const int nv = hd / 16;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t n_kv = pos0 + t + 1;
    for (int h = 0; h < n_head; ++h) {
      const int kvh = h / group;
      const float* qh = q + t * ldq + static_cast<int64_t>(h) * hd;
      float mx = -INFINITY;
      for (int64_t p = 0; p < n_kv; ++p) {
        const float* k = k_cache + p * kv_stride + static_cast<int64_t>(kvh) * hd;
        __m512 acc = _mm512_setzero_ps();
        for (int c = 0; c < nv; ++c) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qh + 16 * c), _mm512_loadu_ps(k + 16 * c), acc);
        const float s = _mm512_reduce_add_ps(acc) * scale;
        scores[p] = s;
        mx = s > mx ? s : mx;
      }
      double sum = 0.0;
      const __m512 vmx = _mm512_set1_ps(mx);
      int64_t p = 0;
      for (; p + 16 <= n_kv; p += 16) {
        const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(scores + p), vmx));
        _mm512_storeu_ps(scores + p, e);
        sum += _mm512_reduce_add_ps(e);
      }
      for (; p < n_kv; ++p) {
        scores[p] = expf(scores[p] - mx);
        sum += scores[p];
      }
      const float inv = static_cast<float>(1.0 / sum);
      float* o = out + t * ldo + static_cast<int64_t>(h) * hd;
      for (int c = 0; c < nv; ++c) _mm512_storeu_ps(o + 16 * c, _mm512_setzero_ps());
      for (int64_t p = 0; p < n_kv; ++p) {
        const __m512 w = _mm512_set1_ps(scores[p] * inv);
        const float* v = v_cache + p * kv_stride + static_cast<int64_t>(kvh) * hd;
        for (int c = 0; c < nv; ++c)
          _mm512_storeu_ps(o + 16 * c, _mm512_fmadd_ps(w, _mm512_loadu_ps(v + 16 * c), _mm512_loadu_ps(o + 16 * c)));
      }
    }
  }
}

}  // namespace tandem::kernels::avx512
