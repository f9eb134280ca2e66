// Causal depthwise short convolution + SiLU over T tokens (Gated DeltaNet's conv).
//
// Channel-major state: state[ch*(K-1) + j] is the input j steps into the window of
// the K-1 previous inputs (oldest first), the layout llama.cpp stores. Weights are
// w[ch*K + j], tap K-1 multiplying the current token.
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// x: T rows of `channels` floats (token-major, row stride ldx); y: T rows (stride ldy).
// Reads the previous inputs from state; does not modify it (see conv_state_after).
// Channels are independent: a caller may split [0, channels) into ranges by offsetting
// x, w, state and y. Dispatched on the caller's tier; conv1d_silu_ref is the scalar reference.
void conv1d_silu(CpuTier tier, const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                 const float* state, float* y, int64_t ldy);
void conv1d_silu_ref(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                     const float* state, float* y, int64_t ldy);

// The conv state after consuming the first n tokens of x (0 <= n <= T), given the
// state before x. Writes into out (may not alias state).
void conv_state_after(const float* x, int64_t ldx, int64_t n, int64_t channels, int K, const float* state,
                      float* out);

}  // namespace tandem::kernels
