#include "serve/policy/divergence_policy.h"

#include <algorithm>

#include "serve/policy/stock_policy.h"

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
  // Issue 30: the closest prompts among the slot's tokens and the recent ones,
  // its common prefix L* with this one, and the forecast X from it. Both are priced as L (an
  // in-pass copy, worth it past min_gap tokens above the nearest state this request keeps).
  int64_t Lr = -1, X = -1;
  if (opt_.forecast && ctx.capacity > 0 && L < N && L >= R) {
    int64_t best = L;
    for (const std::vector<int32_t>& r : recent_) best = std::max(best, common_prefix(r, ctx.prompt.tokens));
    const auto image_ok = [&](int64_t pos) { return !first_image || pos <= first_image->chunk.begin; };
    int64_t below = place ? L : R;
    if (best < N && best - below >= opt_.min_gap && image_ok(best)) {
      Lr = best;
      below = best;
    }
    // Forecast from the closest prompts. Several may share the same prefix (an action prompt
    // and the summary prompt after it may both share only the instructions with the next action
    // prompt, and the summary holds the next screen too); the earliest re-alignment wins: the
    // smallest inserted span, i.e. the prompt this one extends.
    const auto try_forecast = [&](std::span<const int32_t> ref) {
      if (common_prefix(ref, ctx.prompt.tokens) != best) return;
      const std::optional<int64_t> x = forecast_.predict(ref, ctx.prompt.tokens, best);
      if (x && *x < N && *x - std::max(below, best) >= opt_.min_gap && image_ok(*x) && (X < 0 || *x < X)) X = *x;
    };
    try_forecast(ctx.previous);
    for (size_t k = 0; k < recent_.size(); ++k)
      try_forecast(recent_[(recent_next_ + recent_.size() - 1 - k) % recent_.size()]);
  }
  Cut cuts[3];
  size_t n_cuts = 0;
  if (opt_.split_pass) {
    if (place) cuts[n_cuts++] = Cut{L, BatchStart::Divergence};
    if (Lr > 0) cuts[n_cuts++] = Cut{Lr, BatchStart::Divergence};
    if (X > 0) cuts[n_cuts++] = Cut{X, BatchStart::Divergence};
  }
  PrefillPlan plan = plan_stock_prefill(ctx, opt_.rules, std::span<const Cut>(cuts, n_cuts), true);
  // With split_pass the batch starting at L keeps the state before it runs; otherwise the pass
  // that crosses L hands it back. A stock batch may start exactly at L: that copy serves.
  const SaveWhen when = opt_.split_pass ? SaveWhen::BeforeBatch : SaveWhen::InPass;
  if (place) add_save(plan, L, when, CheckpointOrigin::Divergence);
  if (Lr > 0) add_save(plan, Lr, when, CheckpointOrigin::Recent);
  if (X > 0) add_save(plan, X, when, CheckpointOrigin::Forecast);
  // --checkpoint-before-image: the state at every image's first row the prefill reaches (the
  // text pass before it ends there, so the copy needs no pass of its own).
  if (opt_.before_image && ctx.capacity > 0)
    for (const PromptImage& im : ctx.prompt.images)
      if (im.chunk.begin > R) add_save(plan, im.chunk.begin, SaveWhen::InPass, CheckpointOrigin::BeforeImage);
  return plan;
}

void DivergencePolicy::on_request_end(const RequestRecord& record) {
  if (!opt_.forecast || opt_.recent <= 0) return;
  if (recent_.size() < static_cast<size_t>(opt_.recent)) recent_.emplace_back();
  std::vector<int32_t>& r = recent_[recent_next_ % recent_.size()];
  recent_next_ = (recent_next_ + 1) % static_cast<size_t>(opt_.recent);
  r.assign(record.tokens.begin(), record.tokens.begin() + record.n_prompt);
}

std::vector<size_t> DivergencePolicy::evictions(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                                int capacity, uint64_t) {
  std::vector<size_t> evict = thin_older_checkpoints(held, incoming, opt_.thin_span);
  // With the forecast, the lowest checkpoint goes last: it is the prefix every prompt of the slot
  // has shared so far (held positions ascend; a restore below it drops it anyway), where the
  // next new task will diverge. The others go oldest first.
  const bool spare = opt_.forecast && capacity > 1 && held.size() > 1 && (evict.empty() || evict.front() != 0);
  if (spare) {
    for (size_t& i : evict) --i;  // all > 0: indices into held without its first
    evict_oldest_to_fit(held.subspan(1), capacity - 1, evict);
    for (size_t& i : evict) ++i;
    return evict;
  }
  evict_oldest_to_fit(held, capacity, evict);
  return evict;
}

}  // namespace tandem::serve
