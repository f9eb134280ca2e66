// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/attention_avx512.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/simd_avx512.h"

namespace tandem::kernels::avx512 {

namespace {

// out rows [r0, r0 + R) (R <= 4), value dims [c0, c0 + 16*CW): sum_p w[r][p] * V[p] with the
// accumulators in registers; w rows hold the normalised weights (zero past a row's n_kv).
template <int CW>
void pv_block(int R, const float* w, int64_t ldw, int64_t n_pos, const float* v_cache, int64_t kv_stride, int c0,
              float* const* out) {
  __m512 acc[4][CW];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < CW; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t p = 0; p < n_pos; ++p) {
    const float* v = v_cache + p * kv_stride + c0;
    __m512 vv[CW];
    for (int c = 0; c < CW; ++c) vv[c] = _mm512_loadu_ps(v + 16 * c);
    for (int r = 0; r < R; ++r) {
      const __m512 wr = _mm512_set1_ps(w[r * ldw + p]);
      for (int c = 0; c < CW; ++c) acc[r][c] = _mm512_fmadd_ps(wr, vv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < CW; ++c) _mm512_storeu_ps(out[r] + c0 + 16 * c, acc[r][c]);
}

}  // namespace

void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores) {
  const int nv = hd / 16;
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) longest = n_kv[r] > longest ? n_kv[r] : longest;
  const int64_t ld = longest;
  // 1. Scores: each K row once for every query row that sees it.
  float mx[16];
  for (int r = 0; r < n; ++r) mx[r] = -INFINITY;
  for (int64_t p = 0; p < longest; ++p) {
    const float* k = k_cache + p * kv_stride;
    for (int r = 0; r < n; ++r) {
      if (p >= n_kv[r]) continue;
      const float* qr = q[r];
      __m512 acc = _mm512_setzero_ps();
      for (int c = 0; c < nv; ++c) acc = _mm512_fmadd_ps(_mm512_loadu_ps(qr + 16 * c), _mm512_loadu_ps(k + 16 * c), acc);
      const float s = _mm512_reduce_add_ps(acc) * scale;
      scores[r * ld + p] = s;
      mx[r] = s > mx[r] ? s : mx[r];
    }
  }
  // 2. Softmax per row; weights past n_kv are zero.
  for (int r = 0; r < n; ++r) {
    float* sr = scores + r * ld;
    const int64_t m = n_kv[r];
    double sum = 0.0;
    const __m512 vmx = _mm512_set1_ps(mx[r]);
    int64_t p = 0;
    for (; p + 16 <= m; p += 16) {
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(sr + p), vmx));
      _mm512_storeu_ps(sr + p, e);
      sum += _mm512_reduce_add_ps(e);
    }
    for (; p < m; ++p) {
      sr[p] = expf(sr[p] - mx[r]);
      sum += sr[p];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (p = 0; p < m; ++p) sr[p] = sr[p] * inv;
    for (; p < longest; ++p) sr[p] = 0.0f;
  }
  // 3. Weighted V sums: four rows and up to 64 value dims per register block; each V row
  //    is read once per block of four query rows. Adding a zero weight leaves a sum as it is
  //    (w * v = +-0), so a row's result does not depend on the rows it is grouped with.
  for (int r0 = 0; r0 < n; r0 += 4) {
    const int R = n - r0 < 4 ? n - r0 : 4;
    int64_t n_pos = 0;
    for (int r = r0; r < r0 + R; ++r) n_pos = n_kv[r] > n_pos ? n_kv[r] : n_pos;
    for (int c = 0; c < nv; c += 4) {
      const int cw = nv - c < 4 ? nv - c : 4;
      const float* w = scores + r0 * ld;
      switch (cw) {
        case 1: pv_block<1>(R, w, ld, n_pos, v_cache, kv_stride, 16 * c, out + r0); break;
        case 2: pv_block<2>(R, w, ld, n_pos, v_cache, kv_stride, 16 * c, out + r0); break;
        case 3: pv_block<3>(R, w, ld, n_pos, v_cache, kv_stride, 16 * c, out + r0); break;
        default: pv_block<4>(R, w, ld, n_pos, v_cache, kv_stride, 16 * c, out + r0); break;
      }
    }
  }
}

}  // namespace tandem::kernels::avx512
