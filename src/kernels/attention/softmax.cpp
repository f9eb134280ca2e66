#include "kernels/attention/softmax.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention/softmax_avx512.h"

namespace tandem::kernels {

void softmax_scaled_ref(float* x, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    x[j] *= scale;
    mx = std::max(mx, x[j]);
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - mx);
    sum += static_cast<double>(x[j]);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) x[j] *= inv;
}

void softmax_scaled(CpuTier tier, float* x, int64_t n, float scale) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::softmax_scaled(x, n, scale);
#endif
  softmax_scaled_ref(x, n, scale);
}

}  // namespace tandem::kernels
