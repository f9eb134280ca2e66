#include "kernels/norms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

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
      rms_norm(x.data(), w.data(), y.data(), n, eps);
      l2_norm(x.data(), z.data(), n, eps);
      for (int64_t i = 0; i < n; ++i) {
        const double want = x[i] * scale * w[i], want_l2 = x[i] * l2;
        EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-30) << "n " << n << " i " << i;
        EXPECT_NEAR(z[i], want_l2, 1e-6 * std::fabs(want_l2) + 1e-30) << "n " << n << " i " << i;
      }
      rms_norm(x.data(), nullptr, y.data(), n, eps);  // no weights
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i] * scale, 1e-6 * std::fabs(x[i] * scale) + 1e-30);
    }
}

}  // namespace
}  // namespace tandem::kernels
