// Rotary position embedding, NEOX layout (pairs (i, i + n_rot/2)), applied to the
// first n_rot dimensions of a head; the rest pass through.
//
// Qwen3.5 uses interleaved M-RoPE; for text tokens all position components equal
// the token position, which reduces to this ordinary partial NEOX RoPE. The
// angles are built by repeated multiplication in float, as ggml builds its cache.
#pragma once

#include <cstdint>

namespace tandem::kernels {

// Fills cos_sin[2*i], cos_sin[2*i+1] for i < n_rot/2 at position pos.
void rope_cache(int64_t pos, int n_rot, float freq_base, float* cos_sin);
// Rotates n_heads heads of head_dim floats (contiguous) in place.
void rope_apply(float* x, int n_heads, int head_dim, int n_rot, const float* cos_sin);

}  // namespace tandem::kernels
