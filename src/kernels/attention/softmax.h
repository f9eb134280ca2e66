// Row softmax of scaled scores, as ggml's soft_max_ext without a mask: w = x * scale,
// y = exp(w - max w) / Σ exp(w - max w). The vision encoder's attention runs it on every query
// row against all patches (n_pos exponentials per row per head, the most of any elementwise
// stage), so it has an AVX-512 body; the scalar body is the reference (sum in double, as ggml).
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// In place over n floats. Tiers differ in the exponential's last bits (the AVX-512 body's expf
// polynomial is within ~2 ulp) and the summation order.
void softmax_scaled(CpuTier tier, float* x, int64_t n, float scale);
void softmax_scaled_ref(float* x, int64_t n, float scale);

}  // namespace tandem::kernels
