#include "kernels/conv1d.h"

#include "kernels/activations.h"
#include "kernels/elementwise_avx512.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {

void conv1d_silu(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                 const float* state, float* y, int64_t ldy) {
  if (active_cpu_tier() >= CpuTier::Avx512Vnni && K <= 8)
    return avx512::conv1d_silu(x, ldx, T, channels, K, w, state, y, ldy);
  conv1d_silu_ref(x, ldx, T, channels, K, w, state, y, ldy);
}

void conv1d_silu_ref(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w,
                 const float* state, float* y, int64_t ldy) {
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
      y[t * ldy + ch] = silu(sum);
    }
  }
}

void conv_state_after(const float* x, int64_t ldx, int64_t n, int64_t channels, int K, const float* state,
                      float* out) {
  const int S = K - 1;
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int j = 0; j < S; ++j) {
      const int64_t src = n - S + j;
      out[ch * S + j] = src >= 0 ? x[src * ldx + ch] : state[ch * S + (S + src)];
    }
}

}  // namespace tandem::kernels
