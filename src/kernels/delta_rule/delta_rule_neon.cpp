// Armv8.0 Advanced SIMD (the build's default flags on Arm64); nothing with external linkage but
// the header's.
#include "kernels/delta_rule/delta_rule_neon.h"

#include <arm_neon.h>
#include <math.h>
#include <string.h>

namespace tandem::kernels::neon {

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
      const float32x4_t decay = vdupq_n_f32(expf(in.g[t * in.H_v + h]));
      const float beta = in.beta[t * in.H_v + h];
      float* o = in.out + t * in.ldo + h * d;
      for (int j = 0; j < d; ++j) {
        const float* row = src + static_cast<int64_t>(j) * d;  // S[.][j] over the key index
        float* dst = S + static_cast<int64_t>(j) * d;
        // Two accumulators per sum: the FMA chains are half as long.
        float32x4_t kv0 = vdupq_n_f32(0), kv1 = kv0;
        for (int i = 0; i < d; i += 8) {
          kv0 = vfmaq_f32(kv0, vmulq_f32(vld1q_f32(row + i), decay), vld1q_f32(k + i));
          kv1 = vfmaq_f32(kv1, vmulq_f32(vld1q_f32(row + i + 4), decay), vld1q_f32(k + i + 4));
        }
        const float32x4_t delta = vdupq_n_f32(beta * (v[j] - vaddvq_f32(vaddq_f32(kv0, kv1))));
        float32x4_t qs0 = vdupq_n_f32(0), qs1 = qs0;
        for (int i = 0; i < d; i += 8) {
          const float32x4_t r0 = vfmaq_f32(vmulq_f32(vld1q_f32(row + i), decay), vld1q_f32(k + i), delta);
          const float32x4_t r1 = vfmaq_f32(vmulq_f32(vld1q_f32(row + i + 4), decay), vld1q_f32(k + i + 4), delta);
          vst1q_f32(dst + i, r0);
          vst1q_f32(dst + i + 4, r1);
          qs0 = vfmaq_f32(qs0, r0, vld1q_f32(q + i));
          qs1 = vfmaq_f32(qs1, r1, vld1q_f32(q + i + 4));
        }
        o[j] = vaddvq_f32(vaddq_f32(qs0, qs1)) * scale;
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

}  // namespace tandem::kernels::neon
