#include "kernels/rope/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tandem::kernels {
namespace {

// The IMROPE section rule (spec vision.md §5.3) on Qwen3.5's sections: with n_rot = 64 every
// pair falls into t, y, x by j mod 3 (qwen35.md §4.4), the fourth component never used.
TEST(Rope, MropeComponentsFollowTheSectionRule) {
  const int qwen[4] = {11, 11, 10, 0};
  for (int j = 0; j < 32; ++j) EXPECT_EQ(mrope_component(j, qwen), j % 3) << "pair " << j;
  // A rule where the sections run out: [2, 1, 1, 0] over 4 sectors repeating. s = j mod 4:
  // 0 → t (0 < 6), 1 → y (1 < 3), 2 → x (2 < 3), 3 → t (3 % 3 == 0, 3 < 6).
  const int small[4] = {2, 1, 1, 0};
  const int want_small[8] = {0, 1, 2, 0, 0, 1, 2, 0};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(mrope_component(j, small), want_small[j]) << "pair " << j;
  // With a fourth section: sectors past every 3·s_k bound go to e. [1, 1, 1, 3]: s = j mod 6:
  // 0 t, 1 y, 2 x, 3 e (3 % 3 == 0 but 3 >= 3·1), 4 e, 5 e.
  const int with_e[4] = {1, 1, 1, 3};
  const int want_e[6] = {0, 1, 2, 3, 3, 3};
  for (int j = 0; j < 12; ++j) EXPECT_EQ(mrope_component(j, with_e), want_e[j % 6]) << "pair " << j;
}

// Against the formula in double: θ_j = p_c(j) · base^(−2j/n_rot). The kernel builds the angles by
// repeated float multiplication (as ggml does), so θ_j carries up to ~(j + 1) roundings: the bound
// scales with j and |θ|. Positions differ between components by hundreds, so a pair reading the
// wrong component is off by O(1), far above the bound.
TEST(Rope, MropeCacheMatchesTheFormulaInDouble) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> pd(0, 2000);
  struct Case {
    int n_rot;
    float base;
    int sections[4];
  };
  const Case cases[] = {{64, 1e7f, {11, 11, 10, 0}}, {16, 1e7f, {3, 3, 2, 0}}, {32, 1e4f, {4, 4, 4, 4}}};
  for (const Case& c : cases)
    for (int trial = 0; trial < 200; ++trial) {
      const int64_t pos[4] = {pd(rng), pd(rng), pd(rng), pd(rng) / 4};
      std::vector<float> cs(static_cast<size_t>(c.n_rot));
      rope_cache_mrope(pos, c.n_rot, c.base, c.sections, cs.data());
      for (int j = 0; j < c.n_rot / 2; ++j) {
        const double theta = static_cast<double>(pos[mrope_component(j, c.sections)]) *
                             std::pow(static_cast<double>(c.base), -2.0 * j / c.n_rot);
        const double tol = (j + 2) * 1.2e-7 * std::fabs(theta) + 4e-7;
        EXPECT_NEAR(cs[2 * j], std::cos(theta), tol) << "n_rot " << c.n_rot << " pair " << j;
        EXPECT_NEAR(cs[2 * j + 1], std::sin(theta), tol) << "n_rot " << c.n_rot << " pair " << j;
      }
    }
}

// A text token's M-RoPE position is (p, p, p, 0): the cache is rope_cache(p)'s, bit for bit, so the
// text path computes the same numbers whichever builder it calls (and the same as before M-RoPE).
TEST(Rope, MropeWithEqualComponentsIsBitIdenticalToRopeCache) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int64_t> pd(0, 300000);
  const int qwen[4] = {11, 11, 10, 0}, tiny[4] = {3, 3, 2, 0}, with_e[4] = {4, 4, 4, 4};
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t p = trial < 64 ? trial : pd(rng);
    for (const auto& [n_rot, base, sections] :
         {std::tuple{64, 1e7f, qwen}, std::tuple{16, 1e7f, tiny}, std::tuple{32, 1e4f, with_e}}) {
      // The e component is only read where the sections say so; for text it is 0 in llama.cpp
      // and must then also be p here to give plain RoPE where e pairs exist.
      const int64_t pos[4] = {p, p, p, sections[3] > 0 ? p : 0};
      std::vector<float> a(static_cast<size_t>(n_rot)), b(a.size());
      rope_cache(p, n_rot, base, a.data());
      rope_cache_mrope(pos, n_rot, base, sections, b.data());
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "position " << p;
    }
  }
}

// rope_apply rotates each pair (i, i + n_rot/2) by its angle and leaves the other dims alone.
TEST(Rope, ApplyRotatesThePairsOnly) {
  const int n_rot = 8, head_dim = 12, heads = 2;
  std::vector<float> x(heads * head_dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i) - 0.7f;
  const std::vector<float> x0 = x;
  const int64_t pos[4] = {7, 3, 11, 0};
  const int sections[4] = {2, 1, 1, 0};
  std::vector<float> cs(n_rot);
  rope_cache_mrope(pos, n_rot, 100.0f, sections, cs.data());
  rope_apply(x.data(), heads, head_dim, n_rot, cs.data());
  for (int h = 0; h < heads; ++h) {
    const float* a = x0.data() + h * head_dim;
    const float* r = x.data() + h * head_dim;
    for (int i = 0; i < n_rot / 2; ++i) {
      const double c = cs[2 * i], s = cs[2 * i + 1];
      EXPECT_NEAR(r[i], a[i] * c - a[i + n_rot / 2] * s, 1e-6);
      EXPECT_NEAR(r[i + n_rot / 2], a[i] * s + a[i + n_rot / 2] * c, 1e-6);
    }
    for (int i = n_rot; i < head_dim; ++i) EXPECT_EQ(r[i], a[i]);
  }
}

}  // namespace
}  // namespace tandem::kernels
