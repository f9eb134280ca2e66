// The stock policy on hand-written token streams (dry run), request by request: checkpoint
// positions created / restored / evicted / dropped and N - R.
#include "serve/policy/stock_policy.h"

#include <gtest/gtest.h>

#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

std::unique_ptr<StockPolicy> stock(int64_t thin = 8192) {
  StockOptions o;
  o.thin_span = thin;
  return std::make_unique<StockPolicy>(o);
}

TEST(StockPolicy, UserMessageAndTailCheckpoints) {
  auto slot = dry_slot(stock());
  // A system part of 10 tokens, then one user message.
  const auto p1 = cat({seg(1, 10), seg(2, 990)});
  const RequestStats s1 = request(*slot, p1, {10}, 5);
  EXPECT_EQ(s1.restore_pos, 0);
  EXPECT_EQ(s1.new_tokens, 1000);
  EXPECT_EQ(s1.pass_sizes, (P{10, 474, 512, 4}));
  EXPECT_EQ(s1.created_positions, (P{10, 484, 996}));  // user message, N-516, N-4; never 0
  EXPECT_EQ(s1.checkpoints_restored, 0);

  // Same system + first 390 tokens of the user message, then 600 new tokens: L = 400.
  auto p2 = cat({seg(1, 10), seg(2, 390), seg(3, 600)});
  const RequestStats s2 = request(*slot, p2, {10}, 5);
  EXPECT_EQ(s2.lcp, 400);
  EXPECT_EQ(s2.restore_pos, 10);
  EXPECT_EQ(s2.restored_pos, 10);
  EXPECT_EQ(s2.new_tokens, 990);
  EXPECT_EQ(s2.kv_bound, 600);
  EXPECT_EQ(s2.dropped_positions, (P{484, 996}));
  EXPECT_EQ(s2.created_positions, (P{484, 996}));  // the batch at 10 is a user message: already held
  EXPECT_EQ(s2.pass_sizes, (P{474, 512, 4}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{10, 484, 996}));
  EXPECT_EQ(s2.bytes_copied, 3 * kCheckpointBytes);  // one restore, two saves
}

TEST(StockPolicy, PaperExampleSixHundredNewTokens) {
  for (bool consolidate : {false, true}) {
    SlotConfig cfg = stock_slot();
    cfg.batch.consolidate = consolidate;
    auto slot = dry_slot(stock(), cfg);
    const RequestStats s1 = request(*slot, cat({seg(1, 400), seg(2, 100)}), {400});
    EXPECT_EQ(s1.created_positions, (consolidate ? P{400} : P{400, 496}));
    const RequestStats s2 = request(*slot, cat({seg(1, 400), seg(3, 600)}), {400});
    EXPECT_EQ(s2.restore_pos, 400);
    EXPECT_EQ(s2.new_tokens, 600);
    if (consolidate) {
      EXPECT_EQ(s2.pass_sizes, (P{88, 512}));
      EXPECT_EQ(s2.created_positions, (P{488}));  // N - 512
    } else {
      EXPECT_EQ(s2.pass_sizes, (P{84, 512, 4}));
      EXPECT_EQ(s2.created_positions, (P{484, 996}));  // N - 516, N - 4
    }
  }
}

TEST(StockPolicy, OldestFirstEvictionWhenFull) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 2;
  auto slot = dry_slot(stock(), cfg);
  const RequestStats s1 = request(*slot, cat({seg(1, 10), seg(2, 990)}), {10});
  EXPECT_EQ(s1.created_positions, (P{10, 484, 996}));
  EXPECT_EQ(s1.evicted_positions, (P{10}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{484, 996}));
  // A prompt diverging at 400 now finds nothing at or below it: full reprocess.
  const RequestStats s2 = request(*slot, cat({seg(1, 10), seg(2, 390), seg(3, 600)}), {10});
  EXPECT_EQ(s2.restore_pos, 0);
  EXPECT_EQ(s2.new_tokens, 1000);
  EXPECT_EQ(s2.dropped_positions, (P{484, 996}));
  EXPECT_EQ(s2.created_positions, (P{10, 484, 996}));
  EXPECT_EQ(s2.evicted_positions, (P{10}));
}

TEST(StockPolicy, OlderRequestsCheckpointsAreThinned) {
  for (int64_t thin : {int64_t{8192}, int64_t{0}}) {
    auto slot = dry_slot(stock(thin));
    const auto p1 = cat({seg(1, 10), seg(2, 990)});
    request(*slot, p1, {10}, 5);
    // Chat continuation: the first 999 tokens again, then 601 new ones (L = 999 -> R = 996).
    std::vector<int32_t> p2(p1.begin(), p1.begin() + 999);
    const auto tail = seg(4, 601);
    p2.insert(p2.end(), tail.begin(), tail.end());
    const RequestStats s2 = request(*slot, p2, {10});
    EXPECT_EQ(s2.restore_pos, 996);
    EXPECT_EQ(s2.created_positions, (P{1084, 1596}));
    if (thin > 0) {
      // 484 and 996 lie within 8192 tokens of the kept checkpoint at 10.
      EXPECT_EQ(s2.evicted_positions, (P{484, 996}));
      EXPECT_EQ(positions(slot->checkpoints()), (P{10, 1084, 1596}));
    } else {
      EXPECT_TRUE(s2.evicted_positions.empty());
      EXPECT_EQ(positions(slot->checkpoints()), (P{10, 484, 996, 1084, 1596}));
    }
  }
}

TEST(StockPolicy, EarlierUserMessagesOnlyFarFromTheNewestCheckpoint) {
  auto slot = dry_slot(stock());
  // User messages at 10, 9000 and 20000 of a 21000-token prompt, empty slot: 10 is cut (no
  // checkpoint yet), 9000 is more than 8192 past it, 20000 is the last user message.
  const auto p = seg(1, 21000);
  const RequestStats s = request(*slot, p, {10, 9000, 20000});
  EXPECT_EQ(s.created_positions, (P{10, 9000, 20000, 20484, 20996}));

  auto slot2 = dry_slot(stock());
  const RequestStats s2 = request(*slot2, p, {10, 5000, 20000});  // 5000 is within 8192 of 10
  EXPECT_EQ(s2.created_positions, (P{10, 20000, 20484, 20996}));
}

TEST(StockPolicy, NoCheckpointsMeansNoTailCuts) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 0;
  auto slot = dry_slot(stock(), cfg);
  const RequestStats s = request(*slot, seg(1, 600), {});
  EXPECT_EQ(s.pass_sizes, (P{512, 88}));
  EXPECT_TRUE(s.created_positions.empty());
}

TEST(StockPolicy, RestoreRule) {
  auto slot = dry_slot(stock());
  const auto p = seg(1, 100);
  request(*slot, p, {}, 3);
  EXPECT_EQ(positions(slot->checkpoints()), (P{96}));
  // The same prompt again: L = N, but one token must run: R = newest checkpoint <= N - 1.
  RequestStats s = request(*slot, p, {});
  EXPECT_EQ(s.lcp, 100);
  EXPECT_EQ(s.restore_pos, 96);
  EXPECT_EQ(s.new_tokens, 4);
  // Continuation of everything cached: the live state continues, nothing is restored.
  auto more = p;
  more.push_back(7);
  more.push_back(8);
  s = request(*slot, more, {});
  EXPECT_EQ(s.restore_pos, 100);
  EXPECT_EQ(s.checkpoints_restored, 0);
  EXPECT_EQ(s.new_tokens, 2);
  EXPECT_EQ(s.created_positions, (P{100}));  // the last batch starts at 100 and ends the prompt
  // Nothing in common: from 0, every checkpoint dropped.
  s = request(*slot, seg(2, 50), {});
  EXPECT_EQ(s.restore_pos, 0);
  EXPECT_EQ(s.dropped_positions, (P{96, 100}));
}

TEST(StockPolicy, ClearErrors) {
  auto slot = dry_slot(stock());
  const std::vector<int32_t> empty;
  EXPECT_THROW(slot->prefill(Prompt{empty, {}}), std::invalid_argument);
  const auto p = seg(1, 10);
  const std::vector<int64_t> bad = {5, 3};
  EXPECT_THROW(slot->prefill(Prompt{p, bad}), std::invalid_argument);
  const std::vector<int64_t> outside = {10};
  EXPECT_THROW(slot->prefill(Prompt{p, outside}), std::invalid_argument);
  EXPECT_THROW(slot->decode(1), std::logic_error);
  auto small = make_dry_run_slot(stock(), {}, NullBackend(8, 1, 1));
  EXPECT_THROW(small->prefill(Prompt{p, {}}), std::length_error);
}

}  // namespace
}  // namespace tandem::serve
