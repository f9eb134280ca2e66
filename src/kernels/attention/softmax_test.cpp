#include "kernels/attention/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// Every tier against the scalar reference on random rows, lengths around the 16-lane blocks.
TEST(Softmax, EveryTierMatchesTheReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (CpuTier t : kBuildTiers) {
    if (clamp_to_machine(t) != t) continue;
    for (int64_t n : {1, 2, 15, 16, 17, 33, 100, 4508}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng);
      std::vector<float> want = x, got = x;
      softmax_scaled_ref(want.data(), n, 0.125f);
      softmax_scaled(t, got.data(), n, 0.125f);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_NEAR(got[static_cast<size_t>(j)], want[static_cast<size_t>(j)], 2e-6f * std::max(1.0f, want[static_cast<size_t>(j)]))
            << cpu_tier_name(t) << " n " << n << " j " << j;
        sum += got[static_cast<size_t>(j)];
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << cpu_tier_name(t) << " n " << n;
    }
  }
}

TEST(Softmax, LargeScoresDoNotOverflow) {
  std::vector<float> x = {1000.0f, 999.0f, -1000.0f};
  softmax_scaled(cpu_features().best_tier(), x.data(), 3, 1.0f);
  EXPECT_NEAR(x[0], 1.0f / (1.0f + std::exp(-1.0f)), 1e-6f);
  EXPECT_EQ(x[2], 0.0f);
}

}  // namespace
}  // namespace tandem::kernels
