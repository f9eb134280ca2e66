#include "kernels/conv/conv1d.h"

#include "kernels/conv/ssm_conv.h"

namespace tandem::kernels {

// The Gated DeltaNet conv is ssm_conv without a bias, with SiLU: the same arithmetic, the same body.
void conv1d_silu(CpuTier tier, const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                 const float* state, float* y, int64_t ldy) {
  ssm_conv(tier, x, ldx, T, channels, K, w, nullptr, true, state, y, ldy);
}

void conv1d_silu_ref(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                     const float* state, float* y, int64_t ldy) {
  ssm_conv_ref(x, ldx, T, channels, K, w, nullptr, true, state, y, ldy);
}

void conv_state_after(const float* x, int64_t ldx, int64_t n, int64_t channels, int K, const float* state,
                      float* out) {
  const int S = K - 1;
  // Where tap j of every channel comes from is the same for all channels: input row n - S + j
  // (stride 1 over channels) or the old state (stride S). With the sources hoisted the
  // channel loop has no branch; S = 3 (Qwen3.5's kernel of 4) gets its own unrolled loop.
  constexpr int kMaxS = 8;
  if (S <= kMaxS) {
    const float* base[kMaxS];
    int64_t stride[kMaxS];
    for (int j = 0; j < S; ++j) {
      const int64_t src = n - S + j;
      base[j] = src >= 0 ? x + src * ldx : state + (S + src);
      stride[j] = src >= 0 ? 1 : S;
    }
    if (S == 3) {
      const float *b0 = base[0], *b1 = base[1], *b2 = base[2];
      const int64_t s0 = stride[0], s1 = stride[1], s2 = stride[2];
      for (int64_t ch = 0; ch < channels; ++ch) {
        out[3 * ch] = b0[ch * s0];
        out[3 * ch + 1] = b1[ch * s1];
        out[3 * ch + 2] = b2[ch * s2];
      }
      return;
    }
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int j = 0; j < S; ++j) out[ch * S + j] = base[j][ch * stride[j]];
    return;
  }
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int j = 0; j < S; ++j) {
      const int64_t src = n - S + j;
      out[ch * S + j] = src >= 0 ? x[src * ldx + ch] : state[ch * S + (S + src)];
    }
}

}  // namespace tandem::kernels
