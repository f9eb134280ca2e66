#include "kernels/norms.h"

#include <cmath>

namespace tandem::kernels {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  // Like ggml's rms_norm: each square is rounded to float, only the sum is kept in double
  // (sum += (ggml_float)(x*x)); squaring in double shifts the scale by an ulp now and then.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void l2_norm(const float* x, float* y, int64_t n, float eps) {
  double sum = 0.0;  // float squares, double sum: as ggml's l2_norm
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

}  // namespace tandem::kernels
