// Where prompt passes are cut. llama.cpp's server fills a batch of at most n_batch tokens
// and stops early at a forced cut (the last user message, a policy's divergence point) and,
// when checkpoints are on, where the remaining prompt equals min(n_batch, n_ubatch + 4) or
// min(n_batch, 4) (serving.md §3.1 b); llama_decode then splits each batch into micro-
// batches of n_ubatch tokens, one model traversal ("pass") each.
//
// Consolidation (serving.md §3.4) replaces the two tail cuts by one at min(n_batch,
// n_ubatch): 600 new tokens run as 88 + 512 instead of 84 + 512 + 4.
//
// The planner only computes positions; it is shared verbatim by the server and the replay
// simulator, so that both count the same passes.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tandem::serve {

struct BatchConfig {
  int64_t n_batch = 2048;   // llama.cpp's logical batch (-b)
  int64_t n_ubatch = 512;   // llama.cpp's micro-batch (-ub): the size of one pass
  // Consolidation (serving.md §3.4): on is the server's default (--consolidate-batches, the
  // serving settings' table reads it here); off is llama.cpp's batching, the paper's ablation.
  bool consolidate = true;

  // Throws std::invalid_argument unless 1 <= n_ubatch <= n_batch.
  void validate() const;
};

// Why a batch begins where it does.
enum class BatchStart : uint8_t {
  Resume,       // the first batch: the restore point R (or 0)
  Full,         // the previous batch reached n_batch tokens
  UserMessage,  // before a user message (serving.md §3.1 a)
  Tail,         // a tail cut near the prompt end (§3.1 b, or the consolidated one)
  Divergence,   // a policy asked for a batch boundary at the divergence point
  Image,        // an image's first row (text filling stops there), or the text after an image
};
std::string_view to_string(BatchStart why);

struct Cut {
  int64_t pos;
  BatchStart why;
};

struct Batch {
  int64_t begin = 0, end = 0;  // token positions [begin, end)
  BatchStart why = BatchStart::Resume;
  int64_t size() const { return end - begin; }
};

struct Pass {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

struct BatchPlan {
  std::vector<Batch> batches;
  std::vector<Pass> passes;  // every batch split into micro-batches, in order
  std::vector<int64_t> pass_sizes() const;
};

class BatchPlanner {
 public:
  explicit BatchPlanner(BatchConfig cfg);
  const BatchConfig& config() const { return cfg_; }

  // Distances from the prompt end at which a batch stops when tail cuts are on:
  // {min(n_batch, n_ubatch + 4), min(n_batch, 4)}, or {min(n_batch, n_ubatch)} consolidated.
  std::span<const int64_t> tail_offsets() const { return {tail_, n_tail_}; }

  // The batch that starts at `begin` of a prompt of n tokens: it ends at the first of n,
  // begin + n_batch, a cut in `cuts` (ascending; cuts <= begin are ignored) and, with
  // tail_cuts, a tail position. `why` of the result is the reason the *next* batch starts
  // (the batch itself gets begin_why).
  Batch next_batch(int64_t begin, BatchStart begin_why, int64_t n, std::span<const Cut> cuts, bool tail_cuts,
                   BatchStart* next_why) const;

  // The whole plan for tokens [start, n) with fixed cuts.
  BatchPlan plan(int64_t start, int64_t n, std::span<const Cut> cuts, bool tail_cuts) const;

  // Appends the passes of one batch (consecutive pieces of n_ubatch tokens, the last shorter).
  void append_passes(const Batch& batch, std::vector<Pass>& passes) const;

 private:
  BatchConfig cfg_;
  int64_t tail_[2] = {0, 0};
  size_t n_tail_ = 0;
};

}  // namespace tandem::serve
