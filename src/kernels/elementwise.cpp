#include "kernels/elementwise.h"

#include "kernels/activations.h"
#include "kernels/elementwise_avx512.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
  if (active_cpu_tier() >= CpuTier::Avx512Vnni) return avx512::silu_mul(g, u, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

void mul_silu(float* x, const float* z, int64_t n) {
  if (active_cpu_tier() >= CpuTier::Avx512Vnni) return avx512::mul_silu(x, z, n);
  for (int64_t i = 0; i < n; ++i) x[i] *= silu(z[i]);
}

void mul_sigmoid(float* x, const float* z, int64_t n) {
  if (active_cpu_tier() >= CpuTier::Avx512Vnni) return avx512::mul_sigmoid(x, z, n);
  for (int64_t i = 0; i < n; ++i) x[i] *= sigmoid(z[i]);
}

}  // namespace tandem::kernels
