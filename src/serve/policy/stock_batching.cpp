#include "serve/policy/stock_batching.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::serve {

PrefillPlan plan_stock_prefill(const PrefillContext& ctx, const StockRules& rules, std::span<const Cut> extra_cuts,
                               bool place_checkpoints) {
  if (!ctx.planner) throw std::invalid_argument("plan_stock_prefill: the context has no planner");
  const BatchPlanner& planner = *ctx.planner;
  const int64_t N = ctx.prompt.size();
  const int64_t R = ctx.restore_pos;
  const int64_t U = ctx.prompt.last_user_start();
  const auto users = ctx.prompt.user_starts;
  // llama.cpp makes the tail cuts only when the slot keeps checkpoints at all.
  const bool checkpoints_on = ctx.capacity > 0;

  // The rule for earlier user messages looks at the checkpoints the slot holds *while the
  // batch is filled*, i.e. including the ones this request made at earlier batch starts.
  bool have = !ctx.checkpoints.empty();
  int64_t newest = have ? ctx.checkpoints.back().pos : -1;

  PrefillPlan plan;
  size_t ui = 0, ei = 0;
  BatchStart why = BatchStart::Resume;
  bool after_image = false;  // the batch at pos continues a fill that decoded an image
  for (int64_t pos = R; pos < N;) {
    // An image is decoded on its own, in batches of at most n_batch rows (spec vision.md §5.5,
    // §5.8); the text after it fills a new batch, but llama.cpp's fill that decoded the image
    // makes no checkpoint (has_mtmd), so neither the image's batches nor that one get one.
    if (const PromptImage* im = ctx.prompt.image_at(pos)) {
      const int64_t end = im->chunk.end();
      for (int64_t b = pos; b < end; b += planner.config().n_batch) {
        const Batch batch{b, std::min(end, b + planner.config().n_batch), b == pos ? why : BatchStart::Full};
        plan.batches.batches.push_back(batch);
        planner.append_passes(batch, plan.batches.passes);
      }
      pos = end;
      why = BatchStart::Image;
      after_image = true;
      continue;
    }
    // The nearest user-message cut after pos that the rules accept, an extra cut, and the next
    // image (text filling stops there), in ascending order.
    Cut cuts[3];
    size_t n_cuts = 0;
    while (ui < users.size() && users[ui] <= pos) ++ui;
    for (size_t i = ui; i < users.size(); ++i) {
      const int64_t u = users[i];
      if (u == U || !have || u > newest + rules.earlier_user_span) {
        cuts[n_cuts++] = Cut{u, BatchStart::UserMessage};
        break;
      }
    }
    while (ei < extra_cuts.size() && extra_cuts[ei].pos <= pos) ++ei;
    if (ei < extra_cuts.size()) {
      const Cut e = extra_cuts[ei];
      if (n_cuts == 0 || e.pos < cuts[0].pos) {
        cuts[n_cuts++] = e;
        if (n_cuts == 2) std::swap(cuts[0], cuts[1]);
      } else if (e.pos > cuts[0].pos) {
        cuts[n_cuts++] = e;
      }
    }
    if (const PromptImage* next = ctx.prompt.next_image(pos + 1)) {
      cuts[n_cuts++] = Cut{next->chunk.begin, BatchStart::Image};
      std::stable_sort(cuts, cuts + n_cuts, [](const Cut& a, const Cut& b) { return a.pos < b.pos; });
      n_cuts = static_cast<size_t>(
          std::unique(cuts, cuts + n_cuts, [](const Cut& a, const Cut& b) { return a.pos == b.pos; }) - cuts);
    }
    BatchStart next_why = BatchStart::Full;
    const Batch batch = planner.next_batch(pos, why, N, std::span<const Cut>(cuts, n_cuts), checkpoints_on, &next_why);

    if (place_checkpoints && checkpoints_on && pos > 0 && !after_image) {
      const bool on_user = pos == U || why == BatchStart::UserMessage;
      const bool near_end = N - batch.end < planner.config().n_ubatch;
      if (on_user || near_end) {
        plan.saves.push_back(
            PlannedSave{pos, SaveWhen::BeforeBatch, on_user ? CheckpointOrigin::UserMessage : CheckpointOrigin::NearEnd});
        have = true;
        newest = pos;
      }
    }
    plan.batches.batches.push_back(batch);
    planner.append_passes(batch, plan.batches.passes);
    pos = batch.end;
    why = next_why;
    after_image = false;
  }
  return plan;
}

}  // namespace tandem::serve
