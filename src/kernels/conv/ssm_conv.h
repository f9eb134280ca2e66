// Causal depthwise convolution over T tokens with an optional bias and SiLU: LFM2's short conv
// (K = 3, no bias, no activation; spec hybrids.md A6.1) and Mamba2's conv (K = 4, + bias, + SiLU;
// B5.1 step 2), as ggml_ssm_conv followed by the graph's add and silu computes them (Part D).
//
// Layouts as conv1d.h: state[ch*(K-1) + j] is the input j steps into the window of the K-1
// previous inputs (oldest first); w[ch*K + j], tap K-1 multiplying the current token. The state
// is read, not written: conv_state_after (conv1d.h) gives the state after n tokens.
#pragma once

#include <cstdint>

#include "kernels/conv/conv1d.h"  // conv_state_after
#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// x: T rows of `channels` floats (row stride ldx); y: T rows (stride ldy), may not alias x.
// y[t][c] = sum_{j=0..K-1} w[c][j] * in[t-(K-1)+j][c] (float, tap order 0..K-1, as ggml), then
// + bias[c] if bias != nullptr, then SiLU if silu. Channels are independent: a caller may split
// [0, channels) by offsetting x, w, bias, state and y.
// Tiers: AVX-512 body for K <= 8 (sums with FMA: equal to the reference within rounding; SiLU
// by a vector exp); elsewhere the scalar reference.
void ssm_conv(CpuTier tier, const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
              const float* bias, bool silu, const float* state, float* y, int64_t ldy);
void ssm_conv_ref(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                  const float* bias, bool silu, const float* state, float* y, int64_t ldy);

}  // namespace tandem::kernels
