#include "kernels/norms/norms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/norms/norms_avx512.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// rms_norm and l2_norm against the formula in long double (squares rounded to float first, as
// ggml does), for lengths that are and are not multiples of the 8 partial sums, with and
// without weights, and over a wide range of magnitudes.
TEST(Norms, MatchTheFormulaForEveryLength) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (int64_t n : {1, 7, 8, 9, 100, 1024, 2561})
    for (float mag : {1e-3f, 1.0f, 300.0f}) {
      std::vector<float> x(static_cast<size_t>(n)), w(x.size()), y(x.size()), z(x.size());
      for (auto& v : x) v = nd(rng) * mag;
      for (auto& v : w) v = 1.0f + 0.1f * nd(rng);
      long double sum = 0;
      for (float v : x) sum += static_cast<long double>(v * v);
      const float eps = 1e-6f;
      const double scale = 1.0 / std::sqrt(static_cast<double>(sum / n) + eps);
      const double l2 = 1.0 / std::fmax(std::sqrt(static_cast<double>(sum)), eps);
      rms_norm(default_cpu_tier(), x.data(), w.data(), y.data(), n, eps);
      l2_norm(default_cpu_tier(), x.data(), z.data(), n, eps);
      for (int64_t i = 0; i < n; ++i) {
        const double want = x[i] * scale * w[i], want_l2 = x[i] * l2;
        EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30) << "n " << n << " i " << i;
        EXPECT_NEAR(z[i], want_l2, 1e-6 * std::fabs(want_l2) + 1e-30) << "n " << n << " i " << i;
      }
      rms_norm(default_cpu_tier(), x.data(), nullptr, y.data(), n, eps);  // no weights
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] * scale, 1e-6 * std::fabs(x[i] * scale) + 1e-30);
    }
}

// The AVX-512 sum of squares in double, against the scalar loop's order written out here:
// the norms' float outputs hide most last-bit differences of the double sum, this does not.
// (x86 builds only: the AVX-512 file is not compiled for Arm64.)
#ifdef TANDEM_ARCH_X86
TEST(Norms, Avx512SumOfSquaresIsTheScalarLoopsDouble) {
  if (!tier_has(cpu_features().best_tier(), CpuTier::Avx512Vnni)) GTEST_SKIP() << "no AVX-512 on this machine";
  std::mt19937 rng(13);
  std::normal_distribution<float> nd;
  for (int64_t n : {1, 7, 8, 9, 15, 17, 128, 1000, 1024, 2561}) {
    // Magnitudes 2^-20 .. 2^20: a double sum of float squares is exact while its terms span
    // fewer than ~29 binary orders, so only a wide spread makes the order of additions show.
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = std::ldexp(nd(rng), static_cast<int>(rng() % 41) - 20);
    double s[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) s[j] += static_cast<double>(x[i + j] * x[i + j]);
    double want = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; ++i) want += static_cast<double>(x[i] * x[i]);
    EXPECT_EQ(avx512::sum_squares(x.data(), n), want) << "n " << n;
  }
}
#endif

// Every tier computes the same sum of squares (the AVX-512 one keeps the scalar loop's eight
// partial sums as register lanes): the norms agree bit for bit, so a model's logits do not
// depend on the tier through them.
TEST(Norms, EveryTierGivesTheScalarBits) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd;
  for (int64_t n : {1, 7, 8, 9, 15, 17, 128, 1000, 1024, 2561}) {
    std::vector<float> x(static_cast<size_t>(n)), w(x.size()), ref(x.size()), ref_l2(x.size()), y(x.size());
    for (auto& v : x) v = nd(rng) * 3.0f;
    for (auto& v : w) v = 1.0f + 0.1f * nd(rng);
    rms_norm(CpuTier::Scalar, x.data(), w.data(), ref.data(), n, 1e-6f);
    l2_norm(CpuTier::Scalar, x.data(), ref_l2.data(), n, 1e-6f);
    for (CpuTier tier : kBuildTiers) {
      if (clamp_to_machine(tier) != tier) continue;  // not on this machine
      rms_norm(tier, x.data(), w.data(), y.data(), n, 1e-6f);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], ref[i]) << cpu_tier_name(tier) << " n " << n << " i " << i;
      l2_norm(tier, x.data(), y.data(), n, 1e-6f);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], ref_l2[i]) << cpu_tier_name(tier) << " n " << n << " i " << i;
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
