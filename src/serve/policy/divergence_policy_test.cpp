// The divergence policy on an agent-like episode (dry run): rules + task shared, history
// growing, screen replaced. Checkpoints at L when L - R >= min_gap, reused by the next step.
#include "serve/policy/divergence_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "serve/serve_test_util.h"
#include "serve/slot/prompt_cache.h"

namespace tandem::serve {
namespace {

using namespace testing;

// The paper's rule alone (the tests below up to the forecast's were written for it). The forecast's
// margin is 0 here unless a test says otherwise: the named segments below never re-tokenize at an
// insertion point, so the forecast X itself is where the next step diverges.
std::unique_ptr<DivergencePolicy> divergence(bool split = false, int64_t gap = 32, bool forecast = false,
                                             int64_t margin = 0) {
  DivergenceOptions o;
  o.split_pass = split;
  o.min_gap = gap;
  o.forecast = forecast;
  o.forecast_opt.margin = margin;
  return std::make_unique<DivergencePolicy>(o);
}

TEST(DivergencePolicy, CheckpointsAtTheDivergencePointAndReusesThem) {
  auto slot = dry_slot(divergence());
  const RequestStats s1 = request(*slot, episode_step({seg(10, 200)}, 50), {10}, 4);
  EXPECT_EQ(s1.created_positions, (P{10, 284, 796}));  // stock's: user message, N-516, N-4

  // Step 2 diverges at 350 (the history changed 50 tokens in); the newest checkpoint <= 350 is 284.
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.lcp, 350);
  EXPECT_EQ(s2.restore_pos, 284);
  EXPECT_EQ(s2.new_tokens, 516);
  EXPECT_EQ(s2.dropped_positions, (P{796}));
  EXPECT_EQ(s2.created_positions, (P{350, 796}));  // L (inside the 512-token pass), N-4
  EXPECT_EQ(s2.pass_sizes, (P{512, 4}));           // the divergence checkpoint costs no pass

  // Step 3 diverges at 450: restores the divergence checkpoint at 350.
  const RequestStats s3 = request(*slot, episode_step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52), {10}, 4);
  EXPECT_EQ(s3.lcp, 450);
  EXPECT_EQ(s3.restore_pos, 350);
  EXPECT_EQ(s3.new_tokens, 500);
  EXPECT_EQ(s3.kv_bound, 400);
  EXPECT_EQ(s3.created_positions, (P{450, 846}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{10, 284, 350, 450, 846}));

  // Step 4 diverges at 460: only 10 tokens past the checkpoint at 450 (< min_gap): no new one.
  auto p4 = episode_step({seg(10, 50), seg(11, 100), seg(12, 100)}, 52);
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
  request(*slot, episode_step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.created_positions, (P{796}));  // 350 - 284 = 66 < 100
}

TEST(DivergencePolicy, SplitPassEndsABatchAtL) {
  auto slot = dry_slot(divergence(true));
  request(*slot, episode_step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.pass_sizes, (P{66, 446, 4}));
  EXPECT_EQ(s2.created_positions, (P{350, 796}));
}

TEST(DivergencePolicy, EvictsOldestWhenFull) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 3;
  auto slot = dry_slot(divergence(), cfg);
  request(*slot, episode_step({seg(10, 200)}, 50), {10}, 4);
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.created_positions, (P{350, 796}));
  EXPECT_EQ(s2.evicted_positions, (P{10}));
  EXPECT_EQ(positions(slot->checkpoints()), (P{284, 350, 796}));
}

TEST(DivergencePolicy, ConsolidatedTailKeepsOneCopy) {
  SlotConfig cfg = stock_slot();
  cfg.batch.consolidate = true;
  auto slot = dry_slot(divergence(), cfg);
  const RequestStats s1 = request(*slot, episode_step({seg(10, 200)}, 50), {10}, 4);
  EXPECT_EQ(s1.created_positions, (P{10, 288}));  // user message, N-512
  EXPECT_EQ(s1.pass_sizes, (P{10, 278, 512}));
  const RequestStats s2 = request(*slot, episode_step({seg(10, 50), seg(11, 150)}, 51), {10}, 4);
  EXPECT_EQ(s2.restore_pos, 288);
  EXPECT_EQ(s2.created_positions, (P{350}));
  EXPECT_EQ(s2.pass_sizes, (P{512}));
}

// ----- issue 30: the forecast, the closest recent prompt, two kinds through the prompt cache -----

// An action prompt of a growing-history agent: prefix (the user message starts at 10), one
// 60-token line per earlier step (line k = segment 10 + k), "none yet" at the first step, the
// screen section's fixed header (30 tokens), the screen (300), closing instructions (40).
std::vector<int32_t> action(int steps_done, int32_t screen, int64_t screen_len = 300) {
  std::vector<int32_t> p = seg(1, 300);
  const auto add = [&](const std::vector<int32_t>& s) { p.insert(p.end(), s.begin(), s.end()); };
  if (steps_done == 0) add(seg(9, 12));
  for (int k = 0; k < steps_done; ++k) add(seg(10 + k, 60));
  add(seg(40, 30));
  add(seg(screen, screen_len));
  add(seg(41, 40));
  return p;
}

// The summary prompt of the other kind: the same prefix, then its own text.
std::vector<int32_t> summary(int32_t before, int32_t after, int64_t screen_len) {
  return cat({seg(1, 300), seg(60, 50), seg(before, screen_len), seg(61, 20), seg(after, screen_len), seg(62, 30)});
}

const Checkpoint* held_at(const Slot& slot, int64_t pos) {
  for (const Checkpoint& c : slot.checkpoints())
    if (c.pos == pos) return &c;
  return nullptr;
}

TEST(DivergencePolicy, TheForecastIsWhereTheNextStepDivergesAndItIsRestored) {
  auto slot = dry_slot(divergence(false, 8, true));
  request(*slot, action(0, 50), {10}, 4);
  // Step 2 replaced "none yet" with line 1: diverged at 300 (L), re-aligned at 360 (X).
  const RequestStats s2 = request(*slot, action(1, 51), {10}, 4);
  EXPECT_EQ(s2.lcp, 300);
  ASSERT_NE(held_at(*slot, 300), nullptr);
  EXPECT_EQ(held_at(*slot, 300)->origin, CheckpointOrigin::Divergence);
  ASSERT_NE(held_at(*slot, 360), nullptr);
  EXPECT_EQ(held_at(*slot, 360)->origin, CheckpointOrigin::Forecast);
  EXPECT_EQ(s2.restore_pos, 166);               // request 1's N - 516
  EXPECT_EQ(s2.pass_sizes, (P{48, 512, 4}));     // both in-pass: no pass of their own
  // Each later step diverges where the previous one's line ended: its forecast is restored, the
  // prefill is the KV bound, and the new forecast is one line further.
  for (int k = 2; k <= 5; ++k) {
    SCOPED_TRACE("step " + std::to_string(k + 1));
    const RequestStats s = request(*slot, action(k, 50 + k), {10}, 4);
    EXPECT_EQ(s.lcp, 300 + 60 * (k - 1));
    EXPECT_EQ(s.restore_pos, s.lcp);
    EXPECT_EQ(s.new_tokens, s.kv_bound);
    ASSERT_NE(held_at(*slot, 300 + 60 * k), nullptr);
    EXPECT_EQ(held_at(*slot, 300 + 60 * k)->origin, CheckpointOrigin::Forecast);
  }
}

// Prompts as BPE writes them: the last history line's final token merges the line's closing quote
// with the blank line after it (`?".\n\n`: 710000 + line), and becomes the plain `?".\n` (700000 +
// line) once the next line follows it, so step k + 1 diverges one token before the end of line k.
std::vector<int32_t> merged_action(int steps_done, int32_t screen) {
  std::vector<int32_t> p = action(steps_done, screen);
  for (int k = 0; k < steps_done; ++k) p[300 + 60 * k + 59] = (k + 1 == steps_done ? 710000 : 700000) + k;
  return p;
}

TEST(DivergencePolicy, TheForecastMarginKeepsTheStateBeforeAMergedToken) {
  for (int64_t margin : {0, 1}) {
    SCOPED_TRACE("margin " + std::to_string(margin));
    auto slot = dry_slot(divergence(false, 8, true, margin));
    request(*slot, merged_action(0, 50), {10}, 4);
    request(*slot, merged_action(1, 51), {10}, 4);
    for (int k = 2; k <= 5; ++k) {
      SCOPED_TRACE("step " + std::to_string(k + 1));
      const RequestStats s = request(*slot, merged_action(k, 50 + k), {10}, 4);
      EXPECT_EQ(s.lcp, 300 + 60 * (k - 1) - 1);  // inside the merged token
      if (margin == 1) {
        EXPECT_EQ(s.restore_pos, s.lcp);  // the forecast, one token before the re-alignment
        EXPECT_EQ(s.new_tokens, s.kv_bound);
      } else {
        EXPECT_LT(s.restore_pos, s.lcp - 50);  // the state at X lies past the divergence: a line lost
      }
    }
  }
}

TEST(DivergencePolicy, WithoutTheForecastEveryStepReprocessesTheLastLine) {
  auto slot = dry_slot(divergence(false, 8, false));
  request(*slot, action(0, 50), {10}, 4);
  request(*slot, action(1, 51), {10}, 4);
  for (int k = 2; k <= 5; ++k) {
    const RequestStats s = request(*slot, action(k, 50 + k), {10}, 4);
    EXPECT_EQ(s.restore_pos, 300 + 60 * (k - 2));  // the previous L: one line short
    EXPECT_EQ(s.new_tokens, s.kv_bound + 60);
  }
}

TEST(DivergencePolicy, TheForecastNeedsMinGapTokensAboveL) {
  auto slot = dry_slot(divergence(false, 100, true));
  request(*slot, action(0, 50), {10}, 4);
  const RequestStats s2 = request(*slot, action(1, 51), {10}, 4);
  EXPECT_EQ(held_at(*slot, 360), nullptr);  // 60 tokens above L = 300 < min_gap 100
  EXPECT_EQ(s2.lcp, 300);
}

TEST(DivergencePolicy, SplitPassEndsABatchAtTheForecast) {
  auto slot = dry_slot(divergence(true, 8, true));
  request(*slot, action(0, 50), {10}, 4);
  const RequestStats s2 = request(*slot, action(1, 51), {10}, 4);
  ASSERT_NE(held_at(*slot, 360), nullptr);
  // Batches end at L = 300 and at X = 360 (each state is taken before the next batch runs).
  std::vector<int64_t> ends;
  int64_t pos = s2.restore_pos;
  for (int64_t n : s2.pass_sizes) ends.push_back(pos += n);
  EXPECT_NE(std::find(ends.begin(), ends.end(), 300), ends.end());
  EXPECT_NE(std::find(ends.begin(), ends.end(), 360), ends.end());
}

TEST(DivergencePolicy, WithTheForecastTheLowestCheckpointGoesLast) {
  SlotConfig cfg = stock_slot();
  cfg.ctx_checkpoints = 3;
  auto slot = dry_slot(divergence(false, 8, true), cfg);
  request(*slot, action(0, 50), {10}, 4);
  for (int k = 1; k <= 3; ++k) request(*slot, action(k, 50 + k), {10}, 4);
  EXPECT_EQ(slot->checkpoints().front().pos, 10);  // the prefix every prompt shares
  EXPECT_EQ(slot->checkpoints().size(), 3u);
}

// Action, summary, action, ... in one slot with the prompt cache (screens of 1,500 tokens, so that
// an action prompt shares < 25% of the previous one, as on the generated traces). The slot holds the summary when
// the next action prompt comes: measured against it, L is the shared prefix; the policy measures
// the forecast against the closest recent prompt (the previous action), and a cache that selects
// by restorable position brings that prompt's forecast checkpoint back. llama.cpp's fractions
// refuse the entry (it keeps < 25% of its tokens) and the action prompt restarts at the prefix.
TEST(DivergencePolicy, TwoKindsEachRestoreTheirOwnPrefixThroughTheCache) {
  for (CacheSelect sel : {CacheSelect::Restorable, CacheSelect::Fractions}) {
    SCOPED_TRACE(sel == CacheSelect::Restorable ? "restorable" : "fractions");
    auto slot = dry_slot(divergence(false, 8, true));
    PromptCache cache(PromptCacheOptions{.budget_mib = 64, .select = sel});
    slot->set_prompt_cache(&cache);
    request(*slot, action(0, 50, 1500), {10}, 4);
    request(*slot, summary(50, 51, 1500), {10}, 4);
    for (int k = 1; k <= 4; ++k) {
      SCOPED_TRACE("step " + std::to_string(k + 1));
      const RequestStats a = request(*slot, action(k, 50 + k, 1500), {10}, 4);
      if (k >= 2) {
        EXPECT_EQ(a.lcp, sel == CacheSelect::Restorable ? 300 + 60 * (k - 1) : 300);
        EXPECT_EQ(a.prompt_cache_loaded, sel == CacheSelect::Restorable);
        EXPECT_EQ(a.restore_pos, a.lcp);
        if (sel == CacheSelect::Restorable) EXPECT_EQ(a.new_tokens, a.kv_bound);
      }
      // Its forecast, measured against the previous action prompt (not the summary in the slot).
      ASSERT_NE(held_at(*slot, 300 + 60 * k), nullptr);
      EXPECT_EQ(held_at(*slot, 300 + 60 * k)->origin, CheckpointOrigin::Forecast);
      request(*slot, summary(50 + k, 51 + k, 1500), {10}, 4);
    }
    EXPECT_LE(cache.bytes_used(), cache.budget_bytes());
  }
}

}  // namespace
}  // namespace tandem::serve
