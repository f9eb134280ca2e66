// Elementwise products with SiLU used by the FFN and the gated norm, dispatched on the caller's tier.
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// y[i] = silu(g[i]) * u[i]   (SwiGLU)
void silu_mul(CpuTier tier, const float* g, const float* u, float* y, int64_t n);
// x[i] *= silu(z[i])         (the output gate of the Gated DeltaNet norm)
void mul_silu(CpuTier tier, float* x, const float* z, int64_t n);
// x[i] *= sigmoid(z[i])      (the output gate of a full-attention layer)
void mul_sigmoid(CpuTier tier, float* x, const float* z, int64_t n);

}  // namespace tandem::kernels
