#include "serve/policy/stock_policy.h"

namespace tandem::serve {

PrefillPlan StockPolicy::plan_prefill(const PrefillContext& ctx) {
  return plan_stock_prefill(ctx, opt_.rules, {}, /*place_checkpoints=*/true);
}

std::vector<size_t> thin_older_checkpoints(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                           int64_t thin_span) {
  std::vector<size_t> out;
  if (thin_span <= 0) return out;
  bool have_prev = false;
  int64_t prev = 0;
  for (size_t i = 0; i < held.size(); ++i) {
    const Checkpoint& c = held[i];
    if (have_prev && c.request < incoming.request && c.pos - prev < thin_span) {
      out.push_back(i);
      continue;
    }
    have_prev = true;
    prev = c.pos;
  }
  return out;
}

std::vector<size_t> StockPolicy::evictions(std::span<const Checkpoint> held, const Checkpoint& incoming, int capacity,
                                           uint64_t) {
  std::vector<size_t> evict = thin_older_checkpoints(held, incoming, opt_.thin_span);
  evict_oldest_to_fit(held, capacity, evict);
  return evict;
}

}  // namespace tandem::serve
