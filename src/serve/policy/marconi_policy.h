// `marconi`: Marconi's admission and eviction (Pan et al., MLSys 2025) in the same server
// (serving.md §3.2). Admission: the state where the prompt branches from the cached tokens
// (L, when L is inside them) and the state after the prompt's last token (its leaf), both
// handed back by the passes that reach them; no minimum spacing. Batching is stock's, without
// stock's checkpoints.
//
// Eviction when full: score = minmax(recency) + alpha * minmax(FLOPs saved relative to the
// previous checkpoint / bytes held); the lowest goes. recency = 1 / (now - last use) on the
// slot's logical clock; a restore refreshes only the restored checkpoint. alpha = 0 until the
// first eviction; then, once 5x the requests seen at that moment have been seen, alpha is tuned
// once by replaying them (dry run, same slot rules) for every alpha of the grid and keeping the
// one that saves the most prefill FLOPs.
#pragma once

#include <cstdint>
#include <vector>

#include "serve/backend/recorded_request.h"
#include "serve/meter/flop_model.h"
#include "serve/policy/checkpoint_policy.h"
#include "serve/policy/stock_batching.h"

namespace tandem::serve {

struct MarconiOptions {
  FlopModel flops;
  double alpha = 0.0;      // the starting alpha
  bool tune_alpha = true;  // false: keep `alpha` (the replays inside the tuning run this way)
  int window_factor = 5;
  std::vector<double> alpha_grid = default_alpha_grid();
  StockRules rules;

  static std::vector<double> default_alpha_grid();  // 0, 0.1, ..., 2.0
};

class MarconiPolicy final : public CheckpointPolicy {
 public:
  explicit MarconiPolicy(MarconiOptions opt = {}) : opt_(std::move(opt)), alpha_(opt_.alpha) {}
  std::string_view name() const override { return "marconi"; }
  PrefillPlan plan_prefill(const PrefillContext& ctx) override;
  std::vector<size_t> evictions(std::span<const Checkpoint> held, const Checkpoint& incoming, int capacity,
                                uint64_t now) override;
  void on_request_end(const RequestRecord& record) override;

  double alpha() const { return alpha_; }
  bool tuned() const { return tuned_; }
  // Requests after which alpha is tuned (0 before the first eviction).
  uint64_t tune_at() const { return tune_at_; }
  const MarconiOptions& options() const { return opt_; }

  // Prefill FLOPs saved (sum over requests of FLOPs of [0, R)) when `history` is replayed with
  // this alpha under the given slot shape. Public for tests and the simulator.
  static double replay_savings(const MarconiOptions& opt, double alpha, const BatchConfig& batch, int capacity,
                               size_t checkpoint_bytes, std::span<const RecordedRequest> history);

 private:
  void tune();

  MarconiOptions opt_;
  double alpha_;
  bool tuned_ = false;
  uint64_t seen_ = 0, tune_at_ = 0;
  static constexpr size_t kMaxHistory = 4096;
  // What the tuning replays: every request until alpha is tuned (at most kMaxHistory).
  std::vector<RecordedRequest> history_;
  BatchConfig batch_;
  int capacity_ = 0;
  size_t checkpoint_bytes_ = 0;
};

}  // namespace tandem::serve
