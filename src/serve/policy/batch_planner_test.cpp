// Where passes are cut: the paper's examples (600 new tokens: 84 + 512 + 4 stock, 88 + 512
// consolidated), full batches, forced cuts, tiny remainders.
#include "serve/policy/batch_planner.h"

#include <gtest/gtest.h>

namespace tandem::serve {
namespace {

using P = std::vector<int64_t>;

// llama.cpp's batching: the two tail cuts (BatchConfig{} consolidates, the server's default).
constexpr BatchConfig kStock{.consolidate = false};

TEST(BatchPlanner, SixHundredNewTokensStock) {
  BatchPlanner planner(kStock);
  const BatchPlan plan = planner.plan(1000, 1600, {}, true);
  EXPECT_EQ(plan.pass_sizes(), (P{84, 512, 4}));
  ASSERT_EQ(plan.batches.size(), 3u);
  EXPECT_EQ(plan.batches[1].begin, 1084);  // N - 516
  EXPECT_EQ(plan.batches[1].why, BatchStart::Tail);
  EXPECT_EQ(plan.batches[2].begin, 1596);  // N - 4
}

TEST(BatchPlanner, SixHundredNewTokensConsolidated) {
  BatchPlanner planner(BatchConfig{2048, 512, true});
  const BatchPlan plan = planner.plan(1000, 1600, {}, true);
  EXPECT_EQ(plan.pass_sizes(), (P{88, 512}));
  EXPECT_EQ(plan.batches[1].begin, 1088);  // N - 512
}

TEST(BatchPlanner, FullBatchesSplitIntoMicroBatches) {
  BatchPlanner planner(kStock);
  const BatchPlan plan = planner.plan(0, 3000, {}, true);
  EXPECT_EQ(plan.pass_sizes(), (P{512, 512, 512, 512, 436, 512, 4}));
  ASSERT_EQ(plan.batches.size(), 4u);
  EXPECT_EQ(plan.batches[1].why, BatchStart::Full);
  EXPECT_EQ(plan.batches[1].begin, 2048);
}

TEST(BatchPlanner, WithoutTailCutsOnlyFullBatchesAndMicroBatches) {
  BatchPlanner planner(kStock);
  EXPECT_EQ(planner.plan(1000, 1600, {}, false).pass_sizes(), (P{512, 88}));
}

TEST(BatchPlanner, ForcedCutEndsABatch) {
  BatchPlanner planner(kStock);
  const Cut cut{1300, BatchStart::UserMessage};
  const BatchPlan plan = planner.plan(1000, 1600, std::span<const Cut>(&cut, 1), true);
  EXPECT_EQ(plan.pass_sizes(), (P{84, 216, 296, 4}));
  EXPECT_EQ(plan.batches[2].why, BatchStart::UserMessage);
}

TEST(BatchPlanner, ShortRemainders) {
  BatchPlanner planner(kStock);
  EXPECT_EQ(planner.plan(10, 13, {}, true).pass_sizes(), (P{3}));
  EXPECT_EQ(planner.plan(10, 15, {}, true).pass_sizes(), (P{1, 4}));  // the N-4 cut one token in
  EXPECT_EQ(planner.plan(0, 1, {}, true).pass_sizes(), (P{1}));
}

TEST(BatchPlanner, SmallBatchesClampTheTailOffsets) {
  BatchPlanner planner(BatchConfig{16, 8, false});  // tails at min(16, 12) = 12 and 4
  EXPECT_EQ(planner.plan(0, 40, {}, true).pass_sizes(), (P{8, 8, 8, 4, 8, 4}));
}

TEST(BatchPlanner, RejectsBadConfigs) {
  EXPECT_THROW(BatchPlanner(BatchConfig{256, 512, false}), std::invalid_argument);
  EXPECT_THROW(BatchPlanner(BatchConfig{256, 0, false}), std::invalid_argument);
  BatchPlanner planner(kStock);
  const Cut cuts[2] = {{20, BatchStart::UserMessage}, {10, BatchStart::UserMessage}};
  EXPECT_THROW(planner.plan(0, 100, cuts, true), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::serve
