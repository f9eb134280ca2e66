#include "serve/divergence_policy.h"

#include <algorithm>

#include "serve/stock_policy.h"

namespace tandem::serve {

PrefillPlan DivergencePolicy::plan_prefill(const PrefillContext& ctx) {
  const int64_t N = ctx.prompt.size();
  const int64_t L = ctx.lcp, R = ctx.restore_pos;
  const bool place = ctx.capacity > 0 && L < N && L > R && L - R >= opt_.min_gap;
  if (!place) return plan_stock_prefill(ctx, opt_.rules, {}, true);

  if (opt_.split_pass) {
    const Cut cut{L, BatchStart::Divergence};
    PrefillPlan plan = plan_stock_prefill(ctx, opt_.rules, std::span<const Cut>(&cut, 1), true);
    // The batch starting at L may already carry a stock checkpoint; one copy serves both.
    const bool taken = std::any_of(plan.saves.begin(), plan.saves.end(), [&](const PlannedSave& s) { return s.pos == L; });
    if (!taken) {
      auto it = std::lower_bound(plan.saves.begin(), plan.saves.end(), L,
                                 [](const PlannedSave& s, int64_t p) { return s.pos < p; });
      plan.saves.insert(it, PlannedSave{L, SaveWhen::BeforeBatch, CheckpointOrigin::Divergence});
    }
    return plan;
  }
  PrefillPlan plan = plan_stock_prefill(ctx, opt_.rules, {}, true);
  // A stock batch may start exactly at L (a user message, a tail cut): that copy serves.
  const bool taken = std::any_of(plan.saves.begin(), plan.saves.end(), [&](const PlannedSave& s) { return s.pos == L; });
  if (!taken) {
    auto it = std::lower_bound(plan.saves.begin(), plan.saves.end(), L,
                               [](const PlannedSave& s, int64_t p) { return s.pos < p; });
    plan.saves.insert(it, PlannedSave{L, SaveWhen::InPass, CheckpointOrigin::Divergence});
  }
  return plan;
}

std::vector<size_t> DivergencePolicy::evictions(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                                int capacity, uint64_t) {
  std::vector<size_t> evict = thin_older_checkpoints(held, incoming, opt_.thin_span);
  evict_oldest_to_fit(held, capacity, evict);
  return evict;
}

}  // namespace tandem::serve
