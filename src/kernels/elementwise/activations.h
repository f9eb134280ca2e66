// Elementwise activation functions, written exactly as ggml-cpu evaluates them
// (float math, expf), so that logits match llama.cpp's.
#pragma once

#include <cmath>

namespace tandem::kernels {

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// ggml's softplus switches to the identity above 20 to avoid overflow.
inline float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

}  // namespace tandem::kernels
