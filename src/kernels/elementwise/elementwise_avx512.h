// AVX-512 versions of the elementwise kernels and of the table GELU (dispatch in elementwise.cpp /
// gelu.cpp). Only callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// y[i] = silu(g[i]) * u[i]
void silu_mul(const float* g, const float* u, float* y, int64_t n);
// x[i] *= silu(z[i])
void mul_silu(float* x, const float* z, int64_t n);
// x[i] *= sigmoid(z[i])
void mul_sigmoid(float* x, const float* z, int64_t n);
// y = the table GELU of x (gelu.h): 0 at or below -10, x at or above 10, else table[fp16(x)].
void gelu_table(const float* table, const float* x, float* y, int64_t n);

}  // namespace tandem::kernels::avx512
