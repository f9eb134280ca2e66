#include "text/sampler.h"

#include <gtest/gtest.h>

#include <cmath>

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
