#include "kernels/elementwise/elementwise.h"

#include "kernels/elementwise/activations.h"
#include "kernels/elementwise/elementwise_avx512.h"

namespace tandem::kernels {

void silu_mul(CpuTier tier, const float* g, const float* u, float* y, int64_t n) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::silu_mul(g, u, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = silu(g[i]) * u[i];
}

void mul_silu(CpuTier tier, float* x, const float* z, int64_t n) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::mul_silu(x, z, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] *= silu(z[i]);
}

void mul_sigmoid(CpuTier tier, float* x, const float* z, int64_t n) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::mul_sigmoid(x, z, n);
#endif
  for (int64_t i = 0; i < n; ++i) x[i] *= sigmoid(z[i]);
}

}  // namespace tandem::kernels
