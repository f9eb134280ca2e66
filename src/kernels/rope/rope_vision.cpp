#include "kernels/rope/rope_vision.h"

#include <cmath>

#include "kernels/rope/rope.h"

namespace tandem::kernels {

void rope_vision_cache(int64_t row, int64_t col, int head_dim, float freq_base, float* cs) {
  const int n_dims = head_dim / 2, quarter = head_dim / 4;
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_dims));
  float theta_row = static_cast<float>(row), theta_col = static_cast<float>(col);
  for (int j = 0; j < n_dims; ++j) {
    // ggml advances every axis' angle each pair and reads the one of the pair's section; the
    // column's section restarts at col.
    if (j == quarter) theta_col = static_cast<float>(col);
    const float t = j < quarter ? theta_row : theta_col;
    cs[2 * j] = std::cos(t);
    cs[2 * j + 1] = std::sin(t);
    theta_row *= theta_scale;
    theta_col *= theta_scale;
  }
}

// The NEOX rotation over the whole head: rope_apply's, with every pair rotated.
void rope_vision_apply(float* x, int n_heads, int head_dim, const float* cs) { rope_apply(x, n_heads, head_dim, head_dim, cs); }

}  // namespace tandem::kernels
