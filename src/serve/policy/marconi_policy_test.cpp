// The marconi policy (dry run): branch + leaf admission, score-based eviction, alpha tuning.
#include "serve/policy/marconi_policy.h"

#include <gtest/gtest.h>

#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

std::unique_ptr<MarconiPolicy> marconi(double alpha, bool tune) {
  MarconiOptions o;
  o.alpha = alpha;
  o.tune_alpha = tune;
  return std::make_unique<MarconiPolicy>(o);
}

TEST(MarconiPolicy, BranchAndLeafAdmission) {
  auto slot = dry_slot(marconi(0, false));
  const RequestStats s1 = request(*slot, episode_step({seg(10, 200)}, 50), {10}, 2);
  EXPECT_EQ(s1.created_positions, (P{800}));           // the leaf only: nothing cached to branch from
  EXPECT_EQ(s1.pass_sizes, (P{10, 274, 512, 4}));       // stock's batching, without stock's checkpoints
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 2);
  EXPECT_EQ(s2.restore_pos, 0);                         // no checkpoint at or below 350
  EXPECT_EQ(s2.dropped_positions, (P{800}));
  EXPECT_EQ(s2.created_positions, (P{350, 800}));      // branch point L, leaf
  const RequestStats s3 = request(*slot, episode_step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52), {10}, 2);
  EXPECT_EQ(s3.restore_pos, 350);
  EXPECT_EQ(s3.created_positions, (P{450, 850}));
}

// Three steps of the episode on a slot with room for two checkpoints: step 3 holds [350, 800] and
// must evict one to make room. What step 3 evicted and what the slot holds after it.
std::pair<P, P> third_step_with_two_checkpoints(double alpha) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 2;
  auto slot = dry_slot(marconi(alpha, false), cfg);
  request(*slot, episode_step({seg(10, 200)}, 50), {10}, 2);
  request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 2);
  const RequestStats s3 = request(*slot, episode_step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52), {10}, 2);
  return {s3.evicted_positions, positions(slot->checkpoints())};
}

TEST(MarconiPolicy, EvictsByRecencyWithAlphaZero) {
  // Held [350, 800]; step 3 restores 350 (refreshing it), drops 800, adds 450, then the leaf 850
  // needs room: 350 was used before 450 was made, so 350 is the least recent.
  const auto [evicted, held] = third_step_with_two_checkpoints(0);
  EXPECT_EQ(evicted, (P{350}));
  EXPECT_EQ(held, (P{450, 850}));
}

TEST(MarconiPolicy, AlphaWeighsFlopsSavedPerByte) {
  // 350 saves 350 tokens over nothing, 450 only 100 over 350: with alpha = 2 that outweighs recency.
  const auto [evicted, held] = third_step_with_two_checkpoints(2.0);
  EXPECT_EQ(evicted, (P{450}));
  EXPECT_EQ(held, (P{350, 850}));
}

TEST(MarconiPolicy, AlphaIsTunedOnceAfterFiveTimesTheRequestsOfTheFirstEviction) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 2;
  auto owned = marconi(0, true);
  MarconiPolicy* policy = owned.get();
  auto slot = dry_slot(std::move(owned), cfg);
  // An episode whose divergence point wanders, so that some alphas keep better checkpoints.
  std::vector<RecordedRequest> reqs;
  for (int k = 0; k < 20; ++k) {
    RecordedRequest r;
    const int64_t h = 20 + (k * 37) % 150;
    r.prompt = cat({seg(1, 300), seg(10, h), seg(100 + k, 200)});
    r.user_starts = {10};
    r.output = seg(500 + k, 3);
    reqs.push_back(r);
  }
  EXPECT_EQ(policy->tune_at(), 0u);
  replay(*slot, std::span<const RecordedRequest>(reqs.data(), 3));
  EXPECT_EQ(policy->tune_at(), 15u);  // first eviction during request 3
  EXPECT_FALSE(policy->tuned());
  replay(*slot, std::span<const RecordedRequest>(reqs.data() + 3, 12));
  ASSERT_TRUE(policy->tuned());
  // The chosen alpha saves the most FLOPs on the window (the smallest such alpha).
  const std::span<const RecordedRequest> window(reqs.data(), 15);
  double best = -1, best_alpha = -1;
  for (double a : MarconiOptions::default_alpha_grid()) {
    const double s = MarconiPolicy::replay_savings(policy->options(), a, cfg.batch, 2, kCheckpointBytes, window);
    if (s > best) {
      best = s;
      best_alpha = a;
    }
  }
  EXPECT_DOUBLE_EQ(policy->alpha(), best_alpha);
  replay(*slot, std::span<const RecordedRequest>(reqs.data() + 15, 5));  // tuned once: stays
  EXPECT_DOUBLE_EQ(policy->alpha(), best_alpha);
}

}  // namespace
}  // namespace tandem::serve
