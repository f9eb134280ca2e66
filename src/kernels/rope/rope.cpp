#include "kernels/rope/rope.h"

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

int mrope_component(int pair, const int sections[4]) {
  const int total = sections[0] + sections[1] + sections[2] + sections[3];
  if (total <= 0) return 0;  // no sections: every pair is the temporal one (plain RoPE)
  const int s = pair % total;
  if (s % 3 == 1 && s < 3 * sections[1]) return 1;
  if (s % 3 == 2 && s < 3 * sections[2]) return 2;
  if (s % 3 == 0 && s < 3 * sections[0]) return 0;
  return 3;
}

void rope_cache_mrope(const int64_t pos[4], int n_rot, float freq_base, const int sections[4], float* cos_sin) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  // Four angles advanced side by side (ggml_mrope_cache_init): pair j reads the one of its
  // component, so a component equal to p follows exactly rope_cache(p)'s sequence of floats.
  float theta[4] = {static_cast<float>(pos[0]), static_cast<float>(pos[1]), static_cast<float>(pos[2]),
                    static_cast<float>(pos[3])};
  for (int i = 0; i < n_rot / 2; ++i) {
    const float th = theta[mrope_component(i, sections)];
    cos_sin[2 * i] = std::cos(th);
    cos_sin[2 * i + 1] = std::sin(th);
    for (float& t : theta) t *= theta_scale;
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
