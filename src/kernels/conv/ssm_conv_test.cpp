// ssm_conv (LFM2's short conv: K 3, no bias, no activation; Mamba2's: K 4, bias, SiLU) on every
// CPU tier this machine has, against the scalar reference and against ggml_ssm_conv's definition
// (spec hybrids.md Part D) over the concatenation [state | inputs]; the state carried between
// calls by conv_state_after.
#include "kernels/conv/ssm_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernel_test_support.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

struct ConvCase {
  int K;
  bool bias, silu;
};

// Double-precision ggml_ssm_conv (+ bias, + SiLU): sx[c] = [state[c][0..K-2], x[0][c], .., x[T-1][c]],
// out[t][c] = Σ_i sx[c][t+i] · w[c][i].
std::vector<double> oracle(const std::vector<float>& x, int64_t ld, int64_t T, int64_t channels, int K,
                           const std::vector<float>& w, const float* bias, bool silu, const std::vector<float>& st) {
  std::vector<double> out(static_cast<size_t>(T * ld), 0.0);
  const int S = K - 1;
  for (int64_t c = 0; c < channels; ++c) {
    std::vector<double> sx;
    for (int j = 0; j < S; ++j) sx.push_back(st[c * S + j]);
    for (int64_t t = 0; t < T; ++t) sx.push_back(x[t * ld + c]);
    for (int64_t t = 0; t < T; ++t) {
      double s = 0;
      for (int i = 0; i < K; ++i) s += sx[t + i] * w[c * K + i];
      if (bias) s += bias[c];
      if (silu) s = s / (1.0 + std::exp(-s));
      out[t * ld + c] = s;
    }
  }
  return out;
}

// Every tier against the reference and the definition: LFM2's and Mamba2's configurations and
// the other combinations, kernels of 1 to 8 (the AVX-512 body's widest), channel counts not
// multiples of 16 (300: two strips, the last ragged), T = 1 and T < K.
TEST(SsmConv, EveryTierMatchesReferenceAndDefinition) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  const ConvCase cases[] = {{3, false, false}, {4, true, true}, {4, true, false}, {4, false, true},
                            {2, true, true},   {1, true, true}, {8, true, true},  {5, false, false}};
  for (const ConvCase& cc : cases)
    for (int64_t channels : {1, 17, 300})
      for (int64_t T : {1, 2, 3, 9}) {
        const int K = cc.K;
        const int64_t ld = channels + 3;
        std::vector<float> x(static_cast<size_t>(T * ld)), w(static_cast<size_t>(channels * K)),
            st(static_cast<size_t>(channels * (K - 1))), b(static_cast<size_t>(channels));
        for (auto* v : {&x, &w, &st, &b})
          for (auto& e : *v) e = nd(rng);
        const float* bias = cc.bias ? b.data() : nullptr;
        std::vector<float> ref(x.size(), 0.0f);
        ssm_conv_ref(x.data(), ld, T, channels, K, w.data(), bias, cc.silu, st.data(), ref.data(), ld);
        const std::vector<double> exact = oracle(x, ld, T, channels, K, w, bias, cc.silu, st);
        for (int64_t t = 0; t < T; ++t)
          for (int64_t c = 0; c < channels; ++c)
            ASSERT_NEAR(ref[t * ld + c], exact[t * ld + c], 1e-5 * (1 + std::fabs(exact[t * ld + c])))
                << "K " << K << " channels " << channels << " T " << T;
        for (CpuTier tier : machine_tiers()) {
          std::vector<float> y(x.size(), 0.0f);
          ssm_conv(tier, x.data(), ld, T, channels, K, w.data(), bias, cc.silu, st.data(), y.data(), ld);
          for (int64_t t = 0; t < T; ++t)
            for (int64_t c = 0; c < channels; ++c)
              ASSERT_NEAR(y[t * ld + c], ref[t * ld + c], 2e-6 * (1 + std::fabs(ref[t * ld + c])))
                  << "K " << K << " bias " << cc.bias << " silu " << cc.silu << " channels " << channels << " T " << T
                  << " " << cpu_tier_name(tier);
          // The padding between rows is not written.
          for (int64_t t = 0; t < T; ++t)
            for (int64_t c = channels; c < ld; ++c) ASSERT_EQ(y[t * ld + c], 0.0f);
        }
      }
}

// A batch equals the same tokens in two calls with the state handed over by conv_state_after,
// bit for bit, on every tier, for every split (including splits shorter than the window).
TEST(SsmConv, StateCarriedAcrossCallsIsBitIdentical) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd;
  for (const ConvCase& cc : {ConvCase{3, false, false}, ConvCase{4, true, true}})
    for (int64_t channels : {17, 300}) {
      const int K = cc.K, S = K - 1;
      const int64_t T = 7, ld = channels + 1;
      std::vector<float> x(static_cast<size_t>(T * ld)), w(static_cast<size_t>(channels * K)),
          st(static_cast<size_t>(channels * S)), b(static_cast<size_t>(channels));
      for (auto* v : {&x, &w, &st, &b})
        for (auto& e : *v) e = nd(rng);
      const float* bias = cc.bias ? b.data() : nullptr;
      for (CpuTier tier : machine_tiers()) {
        std::vector<float> whole(x.size());
        ssm_conv(tier, x.data(), ld, T, channels, K, w.data(), bias, cc.silu, st.data(), whole.data(), ld);
        for (int64_t split = 1; split < T; ++split) {
          std::vector<float> parts(x.size()), mid(st.size());
          ssm_conv(tier, x.data(), ld, split, channels, K, w.data(), bias, cc.silu, st.data(), parts.data(), ld);
          conv_state_after(x.data(), ld, split, channels, K, st.data(), mid.data());
          ssm_conv(tier, x.data() + split * ld, ld, T - split, channels, K, w.data(), bias, cc.silu, mid.data(),
                   parts.data() + split * ld, ld);
          for (int64_t t = 0; t < T; ++t)
            for (int64_t c = 0; c < channels; ++c)
              ASSERT_EQ(parts[t * ld + c], whole[t * ld + c])
                  << "K " << K << " split " << split << " t " << t << " " << cpu_tier_name(tier);
        }
        // The state after the whole batch is the last K-1 inputs, oldest first.
        std::vector<float> after(st.size());
        conv_state_after(x.data(), ld, T, channels, K, st.data(), after.data());
        for (int64_t c = 0; c < channels; ++c)
          for (int j = 0; j < S; ++j) ASSERT_EQ(after[c * S + j], x[(T - S + j) * ld + c]);
      }
    }
}

}  // namespace
}  // namespace tandem::kernels
