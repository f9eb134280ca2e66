#include "kernels/rope.h"

#include <cmath>

namespace tandem::kernels {

void rope_cache(int64_t pos, int n_rot, float freq_base, float* cos_sin) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    cos_sin[2 * i] = std::cos(theta);
    cos_sin[2 * i + 1] = std::sin(theta);
    theta *= theta_scale;
  }
}

void rope_apply(float* x, int n_heads, int head_dim, int n_rot, const float* cos_sin) {
  const int half = n_rot / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * c - x1 * s;
      v[i + half] = x0 * s + x1 * c;
    }
  }
}

}  // namespace tandem::kernels
