// The vision encoder's 2-D RoPE (spec vision.md §3.4; ggml_rope_multi in VISION mode with
// n_dims = d/2 and four sections of d/4): every head of d values is d/2 rotate-half pairs
// (x[j], x[j + d/2]); pairs j < d/4 turn by row · θ^j, pairs d/4 <= j < d/2 by col · θ^(j - d/4),
// θ = base^(-4/d). The angles are built by repeated multiplication in float, each axis restarting
// at its section, as ggml builds its cache.
#pragma once

#include <cstdint>

namespace tandem::kernels {

// cos_sin[2j], cos_sin[2j+1] for the d/2 pairs of a token at (row, col).
void rope_vision_cache(int64_t row, int64_t col, int head_dim, float freq_base, float* cos_sin);
// Rotates n_heads heads of head_dim floats (head h at x + h * head_dim) in place.
void rope_vision_apply(float* x, int n_heads, int head_dim, const float* cos_sin);

}  // namespace tandem::kernels
