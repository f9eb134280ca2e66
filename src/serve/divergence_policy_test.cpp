// The divergence policy on an agent-like episode (dry run): rules + task shared, history
// growing, screen replaced. Checkpoints at L when L - R >= min_gap, reused by the next step.
#include "serve/divergence_policy.h"

#include <gtest/gtest.h>

#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

// Step k of an episode: rules (300, the user message starts at 10), history entries, screen.
std::vector<int32_t> step(std::initializer_list<std::vector<int32_t>> history, int32_t screen) {
  std::vector<int32_t> p = seg(1, 300);
  for (const auto& h : history) p.insert(p.end(), h.begin(), h.end());
  const auto s = seg(screen, 300);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

std::unique_ptr<DivergencePolicy> divergence(bool split = false, int64_t gap = 32) {
  DivergenceOptions o;
  o.split_pass = split;
  o.min_gap = gap;
  return std::make_unique<DivergencePolicy>(o);
}

TEST(DivergencePolicy, CheckpointsAtTheDivergencePointAndReusesThem) {
  auto slot = dry_slot(divergence());
  const RequestStats s1 = request(*slot, step({seg(10, 200)}, 50), {10}, 4);
  EXPECT_EQ(s1.created_positions, (P{10, 284, 796}));  // stock's: user message, N-516, N-4

  // Step 2 diverges at 350 (the history changed 50 tokens in); the newest checkpoint <= 350 is 284.
  const RequestStats s2 = request(*slot, step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.lcp, 350);
  EXPECT_EQ(s2.restore_pos, 284);
  EXPECT_EQ(s2.new_tokens, 516);
  EXPECT_EQ(s2.dropped_positions, (P{796}));
  EXPECT_EQ(s2.created_positions, (P{350, 796}));  // L (inside the 512-token pass), N-4
  EXPECT_EQ(s2.pass_sizes, (P{512, 4}));           // the divergence checkpoint costs no pass

  // Step 3 diverges at 450: restores the divergence checkpoint at 350.
  const RequestStats s3 = request(*slot, step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52), {10}, 4);
  EXPECT_EQ(s3.lcp, 450);
  EXPECT_EQ(s3.restore_pos, 350);
  EXPECT_EQ(s3.new_tokens, 500);
  EXPECT_EQ(s3.kv_bound, 400);
  EXPECT_EQ(s3.created_positions, (P{450, 846}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{10, 284, 350, 450, 846}));

  // Step 4 diverges at 460: only 10 tokens past the checkpoint at 450 (< min_gap): no new one.
  auto p4 = step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52);
  p4.resize(460);
  const auto screen = seg(53, 300);
  p4.insert(p4.end(), screen.begin(), screen.end());
  const RequestStats s4 = request(*slot, p4, {10});
  EXPECT_EQ(s4.restore_pos, 450);
  EXPECT_EQ(s4.new_tokens, 310);
  EXPECT_EQ(s4.created_positions, (P{756}));  // N-4 only
}

TEST(DivergencePolicy, MinGapIsASetting) {
  auto slot = dry_slot(divergence(false, 100));
  request(*slot, step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.created_positions, (P{796}));  // 350 - 284 = 66 < 100
}

TEST(DivergencePolicy, SplitPassEndsABatchAtL) {
  auto slot = dry_slot(divergence(true));
  request(*slot, step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.pass_sizes, (P{66, 446, 4}));
  EXPECT_EQ(s2.created_positions, (P{350, 796}));
}

TEST(DivergencePolicy, EvictsOldestWhenFull) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 3;
  auto slot = dry_slot(divergence(), cfg);
  request(*slot, step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.created_positions, (P{350, 796}));
  EXPECT_EQ(s2.evicted_positions, (P{10}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{284, 350, 796}));
}

TEST(DivergencePolicy, ConsolidatedTailKeepsOneCopy) {
  SlotConfig cfg = stock_slot();
  cfg.batch.consolidate = true;
  auto slot = dry_slot(divergence(), cfg);
  const RequestStats s1 = request(*slot, step({seg(10, 200)}, 50), {10}, 4);
  EXPECT_EQ(s1.created_positions, (P{10, 288}));  // user message, N-512
  EXPECT_EQ(s1.pass_sizes, (P{10, 278, 512}));
  const RequestStats s2 = request(*slot, step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.restore_pos, 288);
  EXPECT_EQ(s2.created_positions, (P{350}));
  EXPECT_EQ(s2.pass_sizes, (P{512}));
}

}  // namespace
}  // namespace tandem::serve
