// The AVX-512 body of the norms' sum of squares (norms_avx512.cpp; dispatch in norms.cpp). Only
// callable on the AVX-512 tiers.
#pragma once

#include <cstdint>

namespace tandem::kernels::avx512 {

// Σ x[i]² with each square rounded to float and eight double partial sums (lane j takes
// i ≡ j mod 8) combined as ((0+1)+(2+3))+((4+5)+(6+7)), the tail added after: the same bits as
// norms.cpp's scalar loop, eight lanes per instruction instead of one chain per lane.
double sum_squares(const float* x, int64_t n);

}  // namespace tandem::kernels::avx512
