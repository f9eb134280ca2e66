// The AVX-512 body of the scaled row softmax (softmax_avx512.cpp; dispatch in softmax.cpp). Only
// callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// In place: x = softmax(x * scale) (softmax.h).
void softmax_scaled(float* x, int64_t n, float scale);

}  // namespace tandem::kernels::avx512
