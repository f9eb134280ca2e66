// Rotary position embedding, NEOX layout (pairs (i, i + n_rot/2)), applied to the
// first n_rot dimensions of a head; the rest pass through.
//
// Qwen3.5 uses interleaved M-RoPE (IMROPE): every rotary pair takes its angle from one of
// four position components (t, y, x, e), chosen by the pair's index and the model's sections
// (rope_cache_mrope). For text tokens all components equal the token position, which reduces
// to the ordinary partial NEOX RoPE of rope_cache; image rows (spec vision.md §5.3) carry
// different y and x. The angles are built by repeated multiplication in float, as ggml builds
// its cache (ggml_rope_cache_init, ggml_mrope_cache_init), so that both agree with it and
// rope_cache_mrope(p, p, p, e) gives rope_cache(p)'s bits.
#pragma once

#include <cstdint>

namespace tandem::kernels {

// Fills cos_sin[2*i], cos_sin[2*i+1] for i < n_rot/2 at position pos.
void rope_cache(int64_t pos, int n_rot, float freq_base, float* cos_sin);

// Which position component rotary pair j uses under IMROPE with sections [s0, s1, s2, s3]
// (ggml ops.cpp, is_imrope): s = j mod (s0+s1+s2+s3); s%3==1 && s<3·s1 → 1 (y), else
// s%3==2 && s<3·s2 → 2 (x), else s%3==0 && s<3·s0 → 0 (t), else 3 (e).
int mrope_component(int pair, const int sections[4]);

// The cache for an M-RoPE position pos = (t, y, x, e): pair j's angle is
// pos[mrope_component(j)] · base^(−2j/n_rot), each component's angle advanced by the same
// repeated multiplication as rope_cache (no per-section restart). Same layout as rope_cache.
void rope_cache_mrope(const int64_t pos[4], int n_rot, float freq_base, const int sections[4], float* cos_sin);

// Rotates n_heads heads of head_dim floats (contiguous) in place.
void rope_apply(float* x, int n_heads, int head_dim, int n_rot, const float* cos_sin);

}  // namespace tandem::kernels
