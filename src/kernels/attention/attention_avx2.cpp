// Compiled with -mavx2 -mfma (CMakeLists.txt); nothing with external linkage but the header's.
#include "kernels/attention/attention_avx2.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/attention/attention_softmax.h"
#include "kernels/simd/simd_avx2.h"

namespace tandem::kernels::avx2 {
namespace {

constexpr int kRowBlock = 4;

// Scores of rows [r0, r0 + nr) (nr <= 4) at every position one of them sees; a row's score at
// p is stored only where p < its n_kv.
void score_block(int r0, int nr, const float* const* q, const int64_t* n_kv, int hd, float scale, const float* k_cache,
                 int64_t kv_stride, float* scores, int64_t ld) {
  int64_t seen = 0;
  for (int r = r0; r < r0 + nr; ++r) seen = n_kv[r] > seen ? n_kv[r] : seen;
  for (int64_t p = 0; p < seen; ++p) {
    const float* k = k_cache + p * kv_stride;
    __m256 a0[kRowBlock], a1[kRowBlock];
    for (int i = 0; i < kRowBlock; ++i) a0[i] = a1[i] = _mm256_setzero_ps();
    for (int c = 0; c < hd; c += 16) {
      const __m256 k0 = _mm256_loadu_ps(k + c), k1 = _mm256_loadu_ps(k + c + 8);
      for (int i = 0; i < nr; ++i) {
        a0[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q[r0 + i] + c), k0, a0[i]);
        a1[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q[r0 + i] + c + 8), k1, a1[i]);
      }
    }
    for (int i = 0; i < nr; ++i)
      if (p < n_kv[r0 + i]) scores[(r0 + i) * ld + p] = hsum8(_mm256_add_ps(a0[i], a1[i])) * scale;
  }
}

// Out rows [r0, r0 + nr), value dims [c0, c0 + 16): Σ_p w[r][p] · V[p] position by position,
// the V chunk loaded once for the block; weights past a row's n_kv are zero (w · v = ±0 adds
// nothing).
void pv_block(int r0, int nr, const float* w, int64_t ldw, int64_t n_pos, const float* v_cache, int64_t kv_stride,
              int c0, float* const* out) {
  __m256 a0[kRowBlock], a1[kRowBlock];
  for (int i = 0; i < kRowBlock; ++i) a0[i] = a1[i] = _mm256_setzero_ps();
  for (int64_t p = 0; p < n_pos; ++p) {
    const float* v = v_cache + p * kv_stride + c0;
    const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
    for (int i = 0; i < nr; ++i) {
      const __m256 wp = _mm256_set1_ps(w[(r0 + i) * ldw + p]);
      a0[i] = _mm256_fmadd_ps(wp, v0, a0[i]);
      a1[i] = _mm256_fmadd_ps(wp, v1, a1[i]);
    }
  }
  for (int i = 0; i < nr; ++i) {
    _mm256_storeu_ps(out[r0 + i] + c0, a0[i]);
    _mm256_storeu_ps(out[r0 + i] + c0 + 8, a1[i]);
  }
}

}  // namespace

void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores) {
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) longest = n_kv[r] > longest ? n_kv[r] : longest;
  const int64_t ld = longest;
  for (int r0 = 0; r0 < n; r0 += kRowBlock) {
    const int nr = n - r0 < kRowBlock ? n - r0 : kRowBlock;
    score_block(r0, nr, q, n_kv, hd, scale, k_cache, kv_stride, scores, ld);
    // Softmax per row, as attention_causal_ref; weights past n_kv are zero.
    int64_t n_pos = 0;
    for (int r = r0; r < r0 + nr; ++r) {
      n_pos = n_kv[r] > n_pos ? n_kv[r] : n_pos;
      softmax_scores_row(scores + r * ld, n_kv[r], longest);
    }
    for (int c0 = 0; c0 < hd; c0 += 16) pv_block(r0, nr, scores, ld, n_pos, v_cache, kv_stride, c0, out);
  }
}

}  // namespace tandem::kernels::avx2
