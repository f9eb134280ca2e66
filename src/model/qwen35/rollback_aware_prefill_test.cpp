// The pass segmentation of rollback-aware prefill (model/qwen35/rollback_aware_prefill.h): hand-worked
// cases, then random shapes against a set-based statement of the rule.
#include "model/qwen35/rollback_aware_prefill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace tandem {
namespace {

using Segs = std::vector<DeltaRuleSegment>;

Segs plan(int64_t T, std::vector<int64_t> cuts, int64_t K, int64_t tail, bool chunked) {
  Segs out;
  plan_delta_rule_segments(T, cuts, K, tail, chunked, out);
  return out;
}

void expect_segments(const Segs& got, const std::vector<std::tuple<int64_t, int64_t, bool>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].begin, std::get<0>(want[i])) << i;
    EXPECT_EQ(got[i].end, std::get<1>(want[i])) << i;
    EXPECT_EQ(got[i].per_token, std::get<2>(want[i])) << i;
  }
}

TEST(RollbackAwarePrefill, WorkedCases) {
  // A plain chunked prompt pass: one chunked segment.
  expect_segments(plan(512, {}, 0, 0, true), {{0, 512, false}});
  // Four rollback states (k = 3 drafts): the last three tokens per token, the state before them
  // at the end of the chunked part.
  expect_segments(plan(512, {}, 4, 0, true), {{0, 509, false}, {509, 512, true}});
  // The server's per-token tail alone gives the same segments (speculation off, same bits).
  expect_segments(plan(512, {}, 0, 3, true), {{0, 509, false}, {509, 512, true}});
  // Cuts end segments, in the chunked part and inside the tail.
  expect_segments(plan(100, {40, 99}, 4, 0, true), {{0, 40, false}, {40, 97, false}, {97, 99, true}, {99, 100, true}});
  // A cut at the pass's end and one at the tail's start add no segment.
  expect_segments(plan(10, {7, 10}, 4, 0, true), {{0, 7, false}, {7, 10, true}});
  // A tail longer than the pass: everything per token.
  expect_segments(plan(3, {}, 8, 0, true), {{0, 3, true}});
  // The stock way (no chunked body): every segment per token, still split at the cuts.
  expect_segments(plan(20, {5}, 4, 0, false), {{0, 5, true}, {5, 17, true}, {17, 20, true}});
  // A single token.
  expect_segments(plan(1, {1}, 0, 3, true), {{0, 1, true}});
  EXPECT_TRUE(plan(0, {}, 0, 0, true).empty());
}

TEST(RollbackAwarePrefill, RollbackSlots) {
  EXPECT_EQ(rollback_slot(10, 10, 4), 0);   // after the whole pass
  EXPECT_EQ(rollback_slot(10, 7, 4), 3);    // the oldest of four
  EXPECT_EQ(rollback_slot(10, 6, 4), -1);   // not kept
  EXPECT_EQ(rollback_slot(10, 10, 0), -1);  // none kept
}

// Random shapes against the rule as a set: segment ends = cuts ∪ {tail start, if inside} ∪ {T};
// a segment runs per token iff the chunked body is off or it starts at or after the tail.
TEST(RollbackAwarePrefill, RandomShapesFollowTheRule) {
  std::mt19937 rng(7);
  Segs got;
  for (int it = 0; it < 5000; ++it) {
    const int64_t T = 1 + static_cast<int64_t>(rng() % 700);
    std::set<int64_t> cut_set;
    const int n_cuts = static_cast<int>(rng() % 5);
    for (int i = 0; i < n_cuts; ++i) cut_set.insert(1 + static_cast<int64_t>(rng() % T));
    const std::vector<int64_t> cuts(cut_set.begin(), cut_set.end());
    const int64_t K = rng() % 3 == 0 ? 0 : static_cast<int64_t>(rng() % 20);
    const int64_t tail_req = rng() % 2 ? 0 : static_cast<int64_t>(rng() % 20);
    const bool chunked = rng() % 4 != 0;
    plan_delta_rule_segments(T, cuts, K, tail_req, chunked, got);

    const int64_t tail_len = std::max<int64_t>(K > 0 ? K - 1 : 0, tail_req);
    const int64_t tail = tail_len > 0 ? std::max<int64_t>(0, T - tail_len) : T;
    std::set<int64_t> ends(cuts.begin(), cuts.end());
    if (tail > 0 && tail < T) ends.insert(tail);
    ends.insert(T);
    ASSERT_EQ(got.size(), ends.size()) << "T " << T << " K " << K;
    int64_t begin = 0;
    size_t i = 0;
    for (int64_t e : ends) {
      EXPECT_EQ(got[i].begin, begin);
      EXPECT_EQ(got[i].end, e);
      EXPECT_EQ(got[i].per_token, !chunked || begin >= tail);
      begin = e;
      ++i;
    }
    // Every kept rollback state is visible: its position is a segment end or inside a per-token segment.
    for (int64_t s = 0; s < std::min(K, T); ++s) {
      const int64_t after = T - s;
      const bool visible = std::any_of(got.begin(), got.end(), [&](const DeltaRuleSegment& g) {
        return g.end == after || (g.per_token && g.begin < after && after <= g.end);
      });
      EXPECT_TRUE(visible) << "T " << T << " K " << K << " slot " << s;
    }
  }
}

}  // namespace
}  // namespace tandem
