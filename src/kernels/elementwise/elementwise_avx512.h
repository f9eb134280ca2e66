// AVX-512 versions of the elementwise and short-convolution kernels and of the norms' sum of
// squares and the scaled softmax (dispatch in elementwise.cpp / conv1d.cpp / norms.cpp / softmax.cpp). Only callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// y[i] = silu(g[i]) * u[i]
void silu_mul(const float* g, const float* u, float* y, int64_t n);
// x[i] *= silu(z[i])
void mul_silu(float* x, const float* z, int64_t n);
// x[i] *= sigmoid(z[i])
void mul_sigmoid(float* x, const float* z, int64_t n);
// Σ x[i]² with each square rounded to float and eight double partial sums (lane j takes
// i ≡ j mod 8) combined as ((0+1)+(2+3))+((4+5)+(6+7)), the tail added after: the same bits as
// norms.cpp's scalar loop, eight lanes per instruction instead of one chain per lane.
double sum_squares(const float* x, int64_t n);
// Causal depthwise conv + SiLU over channels [0, channels) (see conv1d.h for layouts).
void conv1d_silu(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w, const float* state,
                 float* y, int64_t ldy);

// y = the table GELU of x (gelu.h): 0 at or below -10, x at or above 10, else table[fp16(x)].
void gelu_table(const float* table, const float* x, float* y, int64_t n);
// In place: x = softmax(x * scale) (softmax.h).
void softmax_scaled(float* x, int64_t n, float scale);

}  // namespace tandem::kernels::avx512
