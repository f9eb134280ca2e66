// AVX-512 version of the Q8_K activation quantizer (dispatch in activation_quant.cpp).
// Only callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

#include "gguf/quants.h"

namespace tandem::kernels::avx512 {

// nb blocks of 256 floats to Q8_K, byte for byte what activation_quant.cpp's scalar to_q8_K
// writes: the scale from the first element of largest magnitude (-127 / that element), codes
// rounded half to even and clamped to 127 (NaN products to 0), 16-element sums, d = 1 / iscale.
void quantize_q8_K(const float* x, BlockQ8_K* y, int64_t nb);

}  // namespace tandem::kernels::avx512
