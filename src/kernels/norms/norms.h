// RMS, L2 and layer normalisation as ggml computes them: the sum of squares is
// accumulated in double, the scale is applied in float.
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// tier: the caller's kernel tier; every tier gives the same bits (norms.cpp).
// y = x / sqrt(mean(x^2) + eps) * w   (w may be null: no weight). y may alias x.
void rms_norm(CpuTier tier, const float* x, const float* w, float* y, int64_t n, float eps);
// y = x / max(||x||_2, eps). y may alias x.
void l2_norm(CpuTier tier, const float* x, float* y, int64_t n, float eps);
// LayerNorm as ggml_norm followed by the graph's mul and add (the vision encoder's):
// mean = Σx / n (double sum), v = x - mean, var = Σv² / n (double sum of float squares),
// y = v * (1 / sqrt(var + eps)), then y = y * w + b (w, b may be null). y may alias x.
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps);

}  // namespace tandem::kernels
