#include "kernels/conv/conv1d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/elementwise/elementwise.h"
#include "kernels/kernel_test_support.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// Every tier against the scalar reference; channel counts not multiples of 16, batches
// shorter than the window, a non-zero incoming state, and the state-after helper. Kernels of
// 1 (no window) to 8 (the AVX-512 kernel's widest: eight interleaved weight vectors).
TEST(Conv1d, EveryTierMatchesScalarReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (int K : {1, 2, 3, 4, 5, 8})
    for (int64_t channels : {1, 17, 100, 300})  // 300: two strips of the AVX-512 kernel, the last ragged
      for (int64_t T : {1, 2, 9}) {
        const int64_t ld = channels + 3;
        std::vector<float> x(static_cast<size_t>(T * ld)), w(static_cast<size_t>(channels * K)),
            st(static_cast<size_t>(channels * (K - 1)));
        for (auto* v : {&x, &w, &st})
          for (auto& e : *v) e = nd(rng);
        std::vector<float> ref(x.size(), 0.0f);
        conv1d_silu_ref(x.data(), ld, T, channels, K, w.data(), st.data(), ref.data(), ld);
        for (CpuTier tier : machine_tiers()) {
          std::vector<float> y(x.size(), 0.0f);
          conv1d_silu(tier, x.data(), ld, T, channels, K, w.data(), st.data(), y.data(), ld);
          double m = 0;
          for (size_t i = 0; i < y.size(); ++i) m = std::max(m, std::fabs(double(y[i]) - ref[i]));
          EXPECT_LE(m, 2e-6) << "K " << K << " channels " << channels << " T " << T << " " << cpu_tier_name(tier);
        }
        if (K == 1) continue;  // no state
        // The state after n tokens is the last K-1 inputs, reaching into the old state when n < K-1.
        std::vector<float> after(st.size());
        conv_state_after(x.data(), ld, 1, channels, K, st.data(), after.data());
        for (int64_t ch = 0; ch < channels; ++ch) {
          EXPECT_EQ(after[ch * (K - 1) + (K - 2)], x[ch]);
          if (K > 2) {
            EXPECT_EQ(after[ch * (K - 1)], st[ch * (K - 1) + 1]);
          }
        }
      }
}

// The state after n of the batch's tokens is the last K-1 entries of (old state, inputs
// 0 .. n-1) per channel: every n from 0 (the old state itself) past K-1, for the unrolled
// kernel of 4 (K-1 = 3), other sizes and one beyond the hoisted-source path (K-1 = 9).
TEST(Conv1d, StateAfterIsTheLastInputsOfEveryChannel) {
  std::mt19937 rng(6);
  std::normal_distribution<float> nd;
  for (int K : {2, 4, 5, 10})
    for (int64_t channels : {1, 17, 300}) {
      const int S = K - 1;
      const int64_t T = 12, ld = channels + 5;
      std::vector<float> x(static_cast<size_t>(T * ld)), st(static_cast<size_t>(channels * S));
      for (auto* v : {&x, &st})
        for (auto& e : *v) e = nd(rng);
      for (int64_t n = 0; n <= T; ++n) {
        std::vector<float> after(st.size(), NAN);
        conv_state_after(x.data(), ld, n, channels, K, st.data(), after.data());
        for (int64_t ch = 0; ch < channels; ++ch) {
          std::vector<float> seq(st.begin() + ch * S, st.begin() + (ch + 1) * S);  // oldest first
          for (int64_t t = 0; t < n; ++t) seq.push_back(x[t * ld + ch]);
          for (int j = 0; j < S; ++j)
            ASSERT_EQ(after[ch * S + j], seq[seq.size() - S + j]) << "K " << K << " channels " << channels << " n " << n;
        }
      }
    }
}

// silu_mul, mul_silu and mul_sigmoid on every tier against the formulas; lengths that are not
// multiples of 16, and a large negative input (exp's overflow side).
TEST(Elementwise, SiluProductsMatchScalarOnEveryTier) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int64_t n : {1, 15, 16, 33, 1000}) {
    std::vector<float> g(static_cast<size_t>(n)), u(g.size());
    for (auto& v : g) v = nd(rng);
    for (auto& v : u) v = nd(rng);
    g[0] = -90.0f;  // exp overflow side
    std::vector<float> ref(g.size()), ref_sig(g.size());
    for (size_t i = 0; i < g.size(); ++i) ref[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    for (size_t i = 0; i < g.size(); ++i) ref_sig[i] = u[i] / (1.0f + std::exp(-g[i]));
    for (CpuTier tier : machine_tiers()) {
      std::vector<float> y(g.size()), x = u, s = u;
      silu_mul(tier, g.data(), u.data(), y.data(), n);
      mul_silu(tier, x.data(), g.data(), n);
      mul_sigmoid(tier, s.data(), g.data(), n);
      for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_NEAR(s[i], ref_sig[i], 1e-6 * (1 + std::fabs(ref_sig[i]))) << i << " " << cpu_tier_name(tier);
        EXPECT_NEAR(y[i], ref[i], 1e-6 * (1 + std::fabs(ref[i]))) << i << " " << cpu_tier_name(tier);
        EXPECT_NEAR(x[i], ref[i], 1e-6 * (1 + std::fabs(ref[i]))) << i << " " << cpu_tier_name(tier);
      }
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
