// AVX-512 body of the causal depthwise convolution (ssm_conv_avx512.cpp, compiled with the AVX-512
// flags of CMakeLists.txt; no library code there). Call only after ssm_conv.cpp's dispatch has
// checked the tier, and only for 1 <= K <= 8.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// ssm_conv (ssm_conv.h) over channels [0, channels): the products summed with FMA (equal to the
// reference within rounding), then the bias, then SiLU by a vector exp.
void ssm_conv(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w, const float* bias,
              bool silu, const float* state, float* y, int64_t ldy);

}  // namespace tandem::kernels::avx512
