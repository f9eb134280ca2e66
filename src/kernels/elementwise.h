// Elementwise products with SiLU used by the FFN and the gated norm, dispatched by tier.
#pragma once

#include <cstdint>

namespace tandem::kernels {

// y[i] = silu(g[i]) * u[i]   (SwiGLU)
void silu_mul(const float* g, const float* u, float* y, int64_t n);
// x[i] *= silu(z[i])         (the output gate of the Gated DeltaNet norm)
void mul_silu(float* x, const float* z, int64_t n);
// x[i] *= sigmoid(z[i])      (the output gate of a full-attention layer)
void mul_sigmoid(float* x, const float* z, int64_t n);

}  // namespace tandem::kernels
