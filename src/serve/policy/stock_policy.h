// `stock`: llama.cpp's server (serving.md §3.1). Checkpoints at the start of the batch at
// the last user message and of the near-end batches (N-516 and N-4, or N-512 consolidated);
// oldest-first eviction; when a checkpoint is made, checkpoints of earlier requests that lie
// within `thin_span` tokens of the previous kept one (walking up from the lowest position)
// are thinned out.
#pragma once

#include "serve/policy/checkpoint_policy.h"
#include "serve/policy/stock_batching.h"

namespace tandem::serve {

struct StockOptions {
  StockRules rules;
  int64_t thin_span = 8192;  // 0: no thinning
};

class StockPolicy final : public CheckpointPolicy {
 public:
  explicit StockPolicy(StockOptions opt = {}) : opt_(opt) {}
  std::string_view name() const override { return "stock"; }
  PrefillPlan plan_prefill(const PrefillContext& ctx) override;
  std::vector<size_t> evictions(std::span<const Checkpoint> held, const Checkpoint& incoming, int capacity,
                                uint64_t now) override;
  const StockOptions& options() const { return opt_; }

 private:
  StockOptions opt_;
};

// The thinning step alone (shared with the divergence policy): indices of checkpoints made by
// requests before `incoming.request` that lie within thin_span of the previous kept one.
std::vector<size_t> thin_older_checkpoints(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                           int64_t thin_span);

}  // namespace tandem::serve
