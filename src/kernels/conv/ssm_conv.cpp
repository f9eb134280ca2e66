#include "kernels/conv/ssm_conv.h"

#include "kernels/conv/ssm_conv_avx512.h"
#include "kernels/elementwise/activations.h"

namespace tandem::kernels {

void ssm_conv(CpuTier tier, const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
              const float* bias, bool silu, const float* state, float* y, int64_t ldy) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni) && K >= 1 && K <= 8)
    return avx512::ssm_conv(x, ldx, T, channels, K, w, bias, silu, state, y, ldy);
#endif
  ssm_conv_ref(x, ldx, T, channels, K, w, bias, silu, state, y, ldy);
}

void ssm_conv_ref(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                  const float* bias, bool silu_on, const float* state, float* y, int64_t ldy) {
  const int S = K - 1;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      const float* wc = w + ch * K;
      float sum = 0.0f;
      for (int j = 0; j < K; ++j) {
        const int64_t src = t - S + j;  // token index of this tap (negative: from the state)
        const float v = src >= 0 ? x[src * ldx + ch] : state[ch * S + (S + src)];
        sum += v * wc[j];
      }
      if (bias) sum += bias[ch];
      y[t * ldy + ch] = silu_on ? silu(sum) : sum;
    }
  }
}

}  // namespace tandem::kernels
