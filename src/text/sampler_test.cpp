#include "text/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

namespace tandem::text {
namespace {

std::vector<float> logits(size_t n, uint32_t seed) {
  std::vector<float> l(n);
  uint32_t x = seed;
  for (auto& v : l) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>((x >> 8) % 1000) / 100.0f;
  }
  return l;
}

// Distinct values (no ties at the top).
std::vector<float> distinct_logits(size_t n) {
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = static_cast<float>((i * 7919) % n) / 100.0f;
  return l;
}

TEST(Sampler, GreedyIsArgmax) {
  Sampler s(SamplerParams{.temperature = 0});
  std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(s.sample(l), 1);  // ties: lowest id
}

// argmax_first is std::max_element's index (first of the largest, NaNs never win, a NaN at 0
// does), across lengths around its lane and block sizes, ties, signed zeros, infinities and NaNs;
// the greedy sampler's row path (no copy) picks what its candidate path does (an all-allowed mask
// takes that one).
TEST(Sampler, ArgmaxFirstIsMaxElementAndGreedyPathsAgree) {
  std::mt19937 rng(3);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float pool[] = {-1.5f, 0.0f, -0.0f, 2.0f, 2.0f, 7.25f, -inf, inf, nan, 3.0f};
  Sampler greedy(SamplerParams{.temperature = 0});
  for (size_t n : {0, 1, 2, 15, 16, 17, 63, 64, 65, 127, 129, 1000, 4099, 151669}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> v(n);
      const int mode = trial % 4;  // 0: wide values, 1: few values (ties), 2: with NaNs/infs, 3: all equal
      std::uniform_real_distribution<float> u(-30.0f, 30.0f);
      for (float& x : v) {
        if (mode == 0) x = u(rng);
        else if (mode == 1) x = static_cast<float>(rng() % 5);
        else if (mode == 2) x = pool[rng() % std::size(pool)];
        else x = 1.0f;
      }
      if (n > 0 && trial % 7 == 3) v[0] = nan;
      if (n > 2 && trial % 5 == 1) v[n - 1] = 1e30f;
      const int64_t want = n ? std::max_element(v.begin(), v.end()) - v.begin() : 0;
      ASSERT_EQ(argmax_first(v), want) << "n " << n << " trial " << trial;
      if (n == 0) continue;
      const std::vector<uint64_t> all((n + 63) / 64, ~uint64_t{0});
      ASSERT_EQ(greedy.sample(v), greedy.sample(v, all)) << "n " << n << " trial " << trial;
      ASSERT_EQ(greedy.sample(v), static_cast<int32_t>(want));
    }
  }
}

TEST(Sampler, SameSeedSameTokens) {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  Sampler a(p), b(p);
  p.seed = 99;
  Sampler c(p);
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const auto l = logits(500, static_cast<uint32_t>(i));
    const int32_t x = a.sample(l), y = b.sample(l), z = c.sample(l);
    EXPECT_EQ(x, y);
    differ += x != z;
    a.accept(x);
    b.accept(y);
    c.accept(z);
  }
  EXPECT_GT(differ, 20);
  a.reset();
  b.reset();
  const auto l = logits(500, 0);
  EXPECT_EQ(a.sample(l), b.sample(l));
}

TEST(Sampler, TruncationsKeepOnlyTheHead) {
  const auto l = distinct_logits(1000);
  int32_t best = 0;
  for (int32_t i = 1; i < 1000; ++i)
    if (l[i] > l[best]) best = i;
  SamplerParams p;
  p.temperature = 5.0f;
  p.top_k = 1;
  Sampler k1(p);
  p.top_k = 0;
  p.top_p = 1e-6f;
  Sampler tp(p);
  p.top_p = 1.0f;
  p.min_p = 0.999f;
  Sampler mp(p);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(k1.sample(l), best);
    EXPECT_EQ(tp.sample(l), best);
    EXPECT_EQ(mp.sample(l), best);
  }
}

TEST(Sampler, PenaltiesDiscourageRepeats) {
  std::vector<float> l = {2.0f, 1.9f, 0.0f};
  SamplerParams p;
  p.temperature = 0;
  p.repeat_penalty = 1.5f;
  Sampler s(p);
  EXPECT_EQ(s.sample(l), 0);
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1);  // 2.0 / 1.5 < 1.9
  p.repeat_penalty = 1.0f;
  p.presence_penalty = 0.5f;
  Sampler q(p);
  q.accept(0);
  EXPECT_EQ(q.sample(l), 1);
  p.presence_penalty = 0;
  p.penalty_last_n = 0;  // no window: no penalty
  p.repeat_penalty = 10;
  Sampler r(p);
  r.accept(0);
  EXPECT_EQ(r.sample(l), 0);
}

}  // namespace
}  // namespace tandem::text
