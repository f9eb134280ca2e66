// The softmax of one row of attention scores as attention_causal_ref computes it (max, expf of
// the differences, a double sum, one reciprocal), shared by the AVX2 and NEON bodies so that they
// normalise exactly as the reference does. `static`: each SIMD translation unit keeps its own
// copy, so no function compiled for one instruction set can be picked by the linker for another.
#pragma once

#include <math.h>

#include <cstdint>

namespace tandem::kernels {

// Scores sr[0, m) become weights; sr[m, longest) are set to zero (a row shorter than the block's
// longest adds nothing to the weighted V sums).
static inline void softmax_scores_row(float* sr, int64_t m, int64_t longest) {
  float mx = -INFINITY;
  for (int64_t p = 0; p < m; ++p) mx = fmaxf(mx, sr[p]);
  double sum = 0.0;
  for (int64_t p = 0; p < m; ++p) {
    sr[p] = expf(sr[p] - mx);
    sum += sr[p];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t p = 0; p < m; ++p) sr[p] = sr[p] * inv;
  for (int64_t p = m; p < longest; ++p) sr[p] = 0.0f;
}

}  // namespace tandem::kernels
