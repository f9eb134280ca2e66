#include "serve/policy/batch_planner.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem::serve {

void BatchConfig::validate() const {
  if (n_ubatch < 1 || n_batch < n_ubatch)
    throw std::invalid_argument("BatchConfig: expected 1 <= n_ubatch <= n_batch, got n_batch " +
                                std::to_string(n_batch) + ", n_ubatch " + std::to_string(n_ubatch));
}

std::string_view to_string(BatchStart why) {
  switch (why) {
    case BatchStart::Resume: return "resume";
    case BatchStart::Full: return "full";
    case BatchStart::UserMessage: return "user_message";
    case BatchStart::Tail: return "tail";
    case BatchStart::Divergence: return "divergence";
    case BatchStart::Image: return "image";
  }
  return "?";
}

std::vector<int64_t> BatchPlan::pass_sizes() const {
  std::vector<int64_t> s;
  s.reserve(passes.size());
  for (const Pass& p : passes) s.push_back(p.size());
  return s;
}

BatchPlanner::BatchPlanner(BatchConfig cfg) : cfg_(cfg) {
  cfg_.validate();
  if (cfg_.consolidate) {
    tail_[0] = std::min(cfg_.n_batch, cfg_.n_ubatch);
    n_tail_ = 1;
  } else {
    tail_[0] = std::min(cfg_.n_batch, cfg_.n_ubatch + 4);
    tail_[1] = std::min(cfg_.n_batch, int64_t{4});
    n_tail_ = 2;
  }
}

Batch BatchPlanner::next_batch(int64_t begin, BatchStart begin_why, int64_t n, std::span<const Cut> cuts,
                               bool tail_cuts, BatchStart* next_why) const {
  if (begin < 0 || begin >= n)
    throw std::invalid_argument("BatchPlanner: batch start " + std::to_string(begin) + " outside [0, " +
                                std::to_string(n) + ")");
  // llama.cpp adds one token at a time and checks the stop conditions after each, so every
  // candidate end is > begin; the smallest wins. Forced cuts outrank the tail, the tail
  // outranks a full batch, when two coincide (only the reported reason differs).
  int64_t end = std::min(n, begin + cfg_.n_batch);
  BatchStart why = BatchStart::Full;
  if (tail_cuts)
    for (size_t i = 0; i < n_tail_; ++i) {
      const int64_t e = n - tail_[i];
      if (e > begin && e <= end) {
        end = e;
        why = BatchStart::Tail;
      }
    }
  for (const Cut& c : cuts)
    if (c.pos > begin && c.pos <= end) {
      end = c.pos;
      why = c.why;
      break;  // ascending: the first one after begin is the nearest
    }
  if (next_why) *next_why = why;
  return Batch{begin, end, begin_why};
}

void BatchPlanner::append_passes(const Batch& b, std::vector<Pass>& passes) const {
  for (int64_t p = b.begin; p < b.end; p += cfg_.n_ubatch) passes.push_back(Pass{p, std::min(b.end, p + cfg_.n_ubatch)});
}

BatchPlan BatchPlanner::plan(int64_t start, int64_t n, std::span<const Cut> cuts, bool tail_cuts) const {
  for (size_t i = 1; i < cuts.size(); ++i)
    if (cuts[i].pos <= cuts[i - 1].pos)
      throw std::invalid_argument("BatchPlanner: cut positions must be strictly ascending (" +
                                  std::to_string(cuts[i - 1].pos) + " then " + std::to_string(cuts[i].pos) + ")");
  BatchPlan plan;
  BatchStart why = BatchStart::Resume;
  for (int64_t pos = start; pos < n;) {
    BatchStart next = BatchStart::Full;
    const Batch b = next_batch(pos, why, n, cuts, tail_cuts, &next);
    plan.batches.push_back(b);
    append_passes(b, plan.passes);
    pos = b.end;
    why = next;
  }
  return plan;
}

}  // namespace tandem::serve
