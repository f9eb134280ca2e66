// Armv8.0 Advanced SIMD (the build's default flags on Arm64); nothing with external linkage but
// the header's.
#include "kernels/attention/attention_neon.h"

#include <arm_neon.h>

#include "kernels/attention/attention_softmax.h"

namespace tandem::kernels::neon {
namespace {

constexpr int kRowBlock = 4;

struct F16x4 {  // 16 floats in four registers
  float32x4_t v[4];
};

inline F16x4 load16(const float* p) { return {{vld1q_f32(p), vld1q_f32(p + 4), vld1q_f32(p + 8), vld1q_f32(p + 12)}}; }

// Scores of rows [r0, r0 + nr) (nr <= 4) at every position one of them sees; a row's score at
// p is stored only where p < its n_kv.
void score_block(int r0, int nr, const float* const* q, const int64_t* n_kv, int hd, float scale, const float* k_cache,
                 int64_t kv_stride, float* scores, int64_t ld) {
  int64_t seen = 0;
  for (int r = r0; r < r0 + nr; ++r) seen = n_kv[r] > seen ? n_kv[r] : seen;
  for (int64_t p = 0; p < seen; ++p) {
    const float* k = k_cache + p * kv_stride;
    F16x4 acc[kRowBlock];
    for (int i = 0; i < kRowBlock; ++i)
      for (int l = 0; l < 4; ++l) acc[i].v[l] = vdupq_n_f32(0);
    for (int c = 0; c < hd; c += 16) {
      const F16x4 kc = load16(k + c);
      for (int i = 0; i < nr; ++i) {
        const F16x4 qc = load16(q[r0 + i] + c);
        for (int l = 0; l < 4; ++l) acc[i].v[l] = vfmaq_f32(acc[i].v[l], qc.v[l], kc.v[l]);
      }
    }
    for (int i = 0; i < nr; ++i)
      if (p < n_kv[r0 + i]) {
        const float32x4_t s = vaddq_f32(vaddq_f32(acc[i].v[0], acc[i].v[1]), vaddq_f32(acc[i].v[2], acc[i].v[3]));
        scores[(r0 + i) * ld + p] = vaddvq_f32(s) * scale;
      }
  }
}

// Out rows [r0, r0 + nr), value dims [c0, c0 + 16): Σ_p w[r][p] · V[p] position by position,
// the V chunk loaded once for the block; weights past a row's n_kv are zero (w · v = ±0 adds
// nothing).
void pv_block(int r0, int nr, const float* w, int64_t ldw, int64_t n_pos, const float* v_cache, int64_t kv_stride,
              int c0, float* const* out) {
  F16x4 acc[kRowBlock];
  for (int i = 0; i < kRowBlock; ++i)
    for (int l = 0; l < 4; ++l) acc[i].v[l] = vdupq_n_f32(0);
  for (int64_t p = 0; p < n_pos; ++p) {
    const F16x4 v = load16(v_cache + p * kv_stride + c0);
    for (int i = 0; i < nr; ++i) {
      const float wp = w[(r0 + i) * ldw + p];
      for (int l = 0; l < 4; ++l) acc[i].v[l] = vfmaq_n_f32(acc[i].v[l], v.v[l], wp);
    }
  }
  for (int i = 0; i < nr; ++i)
    for (int l = 0; l < 4; ++l) vst1q_f32(out[r0 + i] + c0 + 4 * l, acc[i].v[l]);
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
    int64_t n_pos = 0;
    for (int r = r0; r < r0 + nr; ++r) {
      n_pos = n_kv[r] > n_pos ? n_kv[r] : n_pos;
      softmax_scores_row(scores + r * ld, n_kv[r], longest);
    }
    for (int c0 = 0; c0 < hd; c0 += 16) pv_block(r0, nr, scores, ld, n_pos, v_cache, kv_stride, c0, out);
  }
}

}  // namespace tandem::kernels::neon
