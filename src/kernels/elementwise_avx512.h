// AVX-512 versions of the elementwise and short-convolution kernels (dispatch in
// elementwise.cpp / conv1d.cpp). Only callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// y[i] = silu(g[i]) * u[i]
void silu_mul(const float* g, const float* u, float* y, int64_t n);
// x[i] *= silu(z[i])
void mul_silu(float* x, const float* z, int64_t n);
// Causal depthwise conv + SiLU over channels [0, channels) (see conv1d.h for layouts).
void conv1d_silu(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w, const float* state,
                 float* y, int64_t ldy);

}  // namespace tandem::kernels::avx512
