#include "serve/policy/marconi_policy.h"

#include <algorithm>
#include <limits>

#include "serve/backend/dry_run.h"

namespace tandem::serve {

std::vector<double> MarconiOptions::default_alpha_grid() {
  std::vector<double> g;
  for (int i = 0; i <= 20; ++i) g.push_back(i / 10.0);
  return g;
}

PrefillPlan MarconiPolicy::plan_prefill(const PrefillContext& ctx) {
  batch_ = ctx.planner->config();
  capacity_ = ctx.capacity;
  PrefillPlan plan = plan_stock_prefill(ctx, opt_.rules, {}, /*place_checkpoints=*/false);
  if (ctx.capacity <= 0) return plan;
  const int64_t N = ctx.prompt.size();
  const int64_t L = ctx.lcp, R = ctx.restore_pos;
  // The branch point: where this prompt leaves the cached sequence (inside it, past R).
  if (L < ctx.cached_before && L < N && L > R) plan.saves.push_back({L, SaveWhen::InPass, CheckpointOrigin::Branch});
  // The leaf: after the prompt's last token.
  plan.saves.push_back({N, SaveWhen::InPass, CheckpointOrigin::Leaf});
  return plan;
}

std::vector<size_t> MarconiPolicy::evictions(std::span<const Checkpoint> held, const Checkpoint& incoming,
                                             int capacity, uint64_t now) {
  checkpoint_bytes_ = incoming.bytes;
  std::vector<size_t> evict;
  if (held.size() < static_cast<size_t>(capacity)) return evict;
  if (tune_at_ == 0 && opt_.tune_alpha) tune_at_ = static_cast<uint64_t>(opt_.window_factor) * (seen_ + 1);

  const size_t n = held.size();
  std::vector<double> rec(n), eff(n);
  for (size_t i = 0; i < n; ++i) {
    rec[i] = 1.0 / static_cast<double>(now - held[i].last_use);
    const int64_t prev = i > 0 ? held[i - 1].pos : 0;
    const double saved = opt_.flops.prefix(held[i].pos) - opt_.flops.prefix(prev);
    eff[i] = saved / static_cast<double>(std::max<size_t>(1, held[i].bytes));
  }
  const auto minmax = [](std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double a = *lo, b = *hi;
    for (double& x : v) x = b > a ? (x - a) / (b - a) : 0.0;
  };
  minmax(rec);
  minmax(eff);
  // Evict the lowest score; among equals the oldest (lowest position) goes.
  while (held.size() - evict.size() >= static_cast<size_t>(capacity)) {
    size_t best = n;
    double best_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i) {
      if (std::find(evict.begin(), evict.end(), i) != evict.end()) continue;
      const double s = rec[i] + alpha_ * eff[i];
      if (s < best_score) {
        best_score = s;
        best = i;
      }
    }
    evict.push_back(best);
  }
  std::sort(evict.begin(), evict.end());
  return evict;
}

void MarconiPolicy::on_request_end(const RequestRecord& record) {
  ++seen_;
  if (!opt_.tune_alpha || tuned_) return;
  RecordedRequest r;
  const auto n = static_cast<size_t>(std::min<int64_t>(record.n_prompt, static_cast<int64_t>(record.tokens.size())));
  r.prompt.assign(record.tokens.begin(), record.tokens.begin() + static_cast<std::ptrdiff_t>(n));
  r.output.assign(record.tokens.begin() + static_cast<std::ptrdiff_t>(n), record.tokens.end());
  r.user_starts.assign(record.user_starts.begin(), record.user_starts.end());
  history_.push_back(std::move(r));
  // Bounded memory when the list never fills: the window can only reach this far back.
  if (history_.size() > kMaxHistory) history_.erase(history_.begin());
  if (tune_at_ > 0 && seen_ >= tune_at_) tune();
}

double MarconiPolicy::replay_savings(const MarconiOptions& opt, double alpha, const BatchConfig& batch, int capacity,
                                     size_t checkpoint_bytes, std::span<const RecordedRequest> history) {
  size_t n_ctx = 1;
  for (const RecordedRequest& r : history) n_ctx = std::max(n_ctx, r.prompt.size() + r.output.size());
  MarconiOptions fixed = opt;
  fixed.alpha = alpha;
  fixed.tune_alpha = false;
  SlotConfig cfg;
  cfg.batch = batch;
  cfg.ctx_checkpoints = capacity;
  auto slot = make_dry_run_slot(std::make_unique<MarconiPolicy>(fixed), cfg,
                                NullBackend(static_cast<int64_t>(n_ctx), checkpoint_bytes, 0));
  double saved = 0;
  for (const RequestStats& s : replay(*slot, history)) saved += opt.flops.prefix(s.restore_pos);
  return saved;
}

void MarconiPolicy::tune() {
  // The window: the last tune_at_ requests (all of them, as recording started at the first).
  const size_t w = std::min<size_t>(history_.size(), static_cast<size_t>(tune_at_));
  const std::span<const RecordedRequest> window(history_.data() + (history_.size() - w), w);
  double best_alpha = alpha_, best = -1;
  for (double a : opt_.alpha_grid) {
    const double s = replay_savings(opt_, a, batch_, capacity_, checkpoint_bytes_, window);
    if (s > best) {  // ties keep the smaller alpha (the grid ascends)
      best = s;
      best_alpha = a;
    }
  }
  alpha_ = best_alpha;
  tuned_ = true;
  history_.clear();
  history_.shrink_to_fit();
}

}  // namespace tandem::serve
