// `divergence`: Tandem's rule (serving.md §3.3, paper §4.2) on top of the stock batching and
// checkpoints. After the restore to R <= L: if L < N and L - R >= min_gap, the state at L is
// kept as a checkpoint: handed back by the pass that crosses L (ForwardOptions::cuts, no
// extra pass), or, with split_pass, by ending a batch at L as an NPU backend must. At most
// one such checkpoint per request (plus, with `forecast`, one at the predicted next divergence);
// later requests reuse them through the normal restore rule.
//
// min_gap comes from the cost model and must be calibrated per device, hence a setting: a
// checkpoint that needs its own pass is worth it past (b + c) / a tokens (the paper's NPU: 32);
// one taken inside the pass that crosses L costs only the copy, c / a. On the development CPU
// (`tandem-sim calibrate`, docs/agent.md) c / a = 6.7 and (b + c) / a = 11.9 tokens, and the
// predicted step latency is lowest from min_gap 8 down (`tandem-sim sweep`): the default is 8. Eviction is stock's oldest-first; thinning is off by
// default because it would drop the previous request's divergence checkpoint as soon as the
// next one is made, which is exactly the checkpoint the next step of an episode reuses.
#pragma once

#include "serve/policy/checkpoint_policy.h"
#include "serve/policy/divergence_forecast.h"
#include "serve/policy/stock_batching.h"

namespace tandem::serve {

struct DivergenceOptions {
  int64_t min_gap = 8;
  bool split_pass = false;
  // Also keep the state at every image's first row (paper §4.5: off by default, it adds no reuse
  // on top of divergence checkpoints on the paper's traces; it serves repeated questions about
  // the same text with a new screenshot when L falls before the text the image follows).
  bool before_image = false;
  // Issue 30 (serve/policy/divergence_forecast.h): also keep the state at X, where this prompt re-aligns
  // with the previous one after the span it inserted at L — where the next request is predicted
  // to diverge when the prompt's history grows by one line per step. Priced like L: X is taken
  // in-pass (one copy, c / a tokens), so it is kept when X - max(L, R) >= min_gap; with
  // split_pass a batch also ends at X. At most one per request, so with L at most two.
  //
  // Two kinds of request in one slot (an agent's action prompt, then its summary prompt): the slot
  // holds the other kind's tokens, so L and the forecast measured against them say little. The
  // policy therefore remembers the last `recent` prompts and measures against the closest one
  // (longest common prefix, L* >= L): the state at L* ("recent", priced from max(L, R)) and the
  // forecast from that prompt. At most three rule checkpoints per request (L, L*, X).
  bool forecast = true;
  ForecastOptions forecast_opt;
  int recent = 4;
  StockRules rules;
  int64_t thin_span = 0;
};

class DivergencePolicy final : public CheckpointPolicy {
 public:
  explicit DivergencePolicy(DivergenceOptions opt = {}) : opt_(opt), forecast_(opt.forecast_opt) {}
  std::string_view name() const override { return "divergence"; }
  PrefillPlan plan_prefill(const PrefillContext& ctx) override;
  void on_request_end(const RequestRecord& record) override;
  std::vector<size_t> evictions(std::span<const Checkpoint> held, const Checkpoint& incoming, int capacity,
                                uint64_t now) override;
  const DivergenceOptions& options() const { return opt_; }
  void set_min_gap(int64_t gap) { opt_.min_gap = gap; }

 private:
  DivergenceOptions opt_;
  DivergenceForecast forecast_;  // its buffers are reused from request to request
  std::vector<std::vector<int32_t>> recent_;  // the last prompts, a ring (buffers reused)
  size_t recent_next_ = 0;
};

}  // namespace tandem::serve
