// The tanh GELU as ggml-cpu computes it (spec vision.md §3.8): GGML_GELU_FP16 is defined, so
// inputs in (-10, 10) are rounded to F16 and looked up in a 65536-entry table of
// fp16(gelu_tanh(x)) for every F16 x; below -10 the result is 0, above 10 it is x. The table
// makes the encoder's numbers llama.cpp's (an exact GELU differs by up to an F16 ulp).
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), in float (ggml_gelu_f32).
float gelu_tanh(float x);
// y[i] = ggml-cpu's table GELU of x[i]. y may alias x. Every tier gives the same bits (the
// AVX-512 body converts with VCVTPS2PH, round to nearest even like fp32_to_fp16, and gathers).
void gelu_tanh_table(CpuTier tier, const float* x, float* y, int64_t n);
void gelu_tanh_table_ref(const float* x, float* y, int64_t n);

}  // namespace tandem::kernels
