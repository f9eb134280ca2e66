// llama.cpp's prompt batching and checkpoint creation rules (serving.md §3.1), shared by
// the three policies: `stock` is exactly these rules, `divergence` adds its cut at L, and
// `marconi` keeps the batching but places its own checkpoints.
//
// Batches are cut (a) before the last user message, and before an earlier user message only
// while the slot has no checkpoint or that message starts more than `earlier_user_span`
// tokens past the newest checkpoint; (b) at the tail positions (BatchPlanner, only when the
// slot keeps checkpoints); (c) when full. A checkpoint is the state at the start of a batch
// that starts at a user-message cut or leaves fewer than n_ubatch prompt tokens after it,
// never at position 0.
#pragma once

#include <cstdint>
#include <span>

#include "serve/policy/checkpoint_policy.h"

namespace tandem::serve {

struct StockRules {
  int64_t earlier_user_span = 8192;
};

// extra_cuts: further batch boundaries (ascending), e.g. a divergence point that must end a
// batch. place_checkpoints = false: batching only (the marconi policy places its own).
PrefillPlan plan_stock_prefill(const PrefillContext& ctx, const StockRules& rules, std::span<const Cut> extra_cuts,
                               bool place_checkpoints);

}  // namespace tandem::serve
