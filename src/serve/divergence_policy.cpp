#include "serve/divergence_policy.h"

#include <algorithm>

#include "serve/stock_policy.h"

namespace tandem::serve {

namespace {

// Adds a save at pos unless the plan already keeps the state there (one copy serves both).
void add_save(PrefillPlan& plan, int64_t pos, SaveWhen when, CheckpointOrigin origin) {
  const bool taken = std::any_of(plan.saves.begin(), plan.saves.end(), [&](const PlannedSave& s) { return s.pos == pos; });
  if (taken) return;
  auto it = std::lower_bound(plan.saves.begin(), plan.saves.end(), pos,
                             [](const PlannedSave& s, int64_t p) { return s.pos < p; });
  plan.saves.insert(it, PlannedSave{pos, when, origin});
}

}  // namespace

PrefillPlan DivergencePolicy::plan_prefill(const PrefillContext& ctx) {
  const int64_t N = ctx.prompt.size();
  const int64_t L = ctx.lcp, R = ctx.restore_pos;
  // The paper's rule (§4.2, §4.5): L must precede the prompt's end and any image — the text
  // before the first image, where M-RoPE positions still equal token indices.
  const PromptImage* first_image = ctx.prompt.next_image(0);
  const bool before_images = !first_image || L <= first_image->chunk.begin;
  const bool place = ctx.capacity > 0 && L < N && L > R && L - R >= opt_.min_gap && before_images;
  const Cut cut{L, BatchStart::Divergence};
  PrefillPlan plan = plan_stock_prefill(ctx, opt_.rules, place && opt_.split_pass ? std::span<const Cut>(&cut, 1)
                                                                                   : std::span<const Cut>(), true);
  // With split_pass the batch starting at L keeps the state before it runs; otherwise the pass
  // that crosses L hands it back. A stock batch may start exactly at L: that copy serves.
  if (place) add_save(plan, L, opt_.split_pass ? SaveWhen::BeforeBatch : SaveWhen::InPass, CheckpointOrigin::Divergence);
  // --checkpoint-before-image: the state at every image's first row the prefill reaches (the
  // text pass before it ends there, so the copy needs no pass of its own).
  if (opt_.before_image && ctx.capacity > 0)
    for (const PromptImage& im : ctx.prompt.images)
      if (im.chunk.begin > R) add_save(plan, im.chunk.begin, SaveWhen::InPass, CheckpointOrigin::BeforeImage);
  return plan;
}

std::vector<size_t> DivergencePolicy::evictions(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                                int capacity, uint64_t) {
  std::vector<size_t> evict = thin_older_checkpoints(held, incoming, opt_.thin_span);
  evict_oldest_to_fit(held, capacity, evict);
  return evict;
}

}  // namespace tandem::serve
