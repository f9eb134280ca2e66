// A server slot: the cached tokens, the live state (behind a StateBackend), and a bounded
// list of checkpoints. prefill() applies the restore rule of serving.md §2 and runs the passes
// the policy planned; decode() appends one token. The policy decides, the slot executes.
//
// Restore rule: L = common prefix of the prompt and the cached tokens; L' = min(L, N - 1) so
// that at least one prompt token is processed. If L' equals the cached length, continue from
// the live state; otherwise restore the newest checkpoint at R <= L' (truncating the KV cache)
// or, with none, start from 0; checkpoints beyond R are dropped.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "serve/meter/request_stats.h"
#include "serve/policy/batch_planner.h"
#include "serve/policy/checkpoint_policy.h"
#include "serve/slot/checkpoint.h"
#include "serve/slot/prompt.h"
#include "serve/slot/prompt_cache.h"
#include "serve/slot/state_backend.h"
#include "serve/spec/spec_config.h"

namespace tandem::serve {

class Speculator;  // serve/spec/speculator.h
class TokenPicker;

struct SlotConfig {
  BatchConfig batch;
  int ctx_checkpoints = 8;  // the paper's configuration (llama.cpp's default is 32)
};

struct PrefillReport {
  // The last prompt token's logits (empty under the dry-run backend); valid until the slot's
  // next prefill or decode.
  std::span<const float> logits;
  RequestStats stats;             // prefill half; decode fields are still 0
  BatchPlan plan;
};

class Slot {
 public:
  Slot(std::unique_ptr<StateBackend> backend, std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg = {});
  ~Slot();
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  // Switches take effect at the next prefill; held checkpoints stay.
  void set_policy(std::unique_ptr<CheckpointPolicy> policy);
  void set_consolidate(bool on);
  void set_batch(BatchConfig batch);
  // Fewer checkpoints than held: the oldest go now.
  void set_capacity(int ctx_checkpoints);
  // nullptr: no prompt cache. The cache must outlive its use by the slot.
  void set_prompt_cache(PromptCache* cache) { cache_ = cache; }

  // Ends the previous request if one is open, then prefills. Throws std::invalid_argument or
  // std::length_error (the message says what was expected) before touching any state.
  PrefillReport prefill(const Prompt& prompt);
  // Feeds one generated token; returns its logits (valid until the next call). No checkpoints,
  // no allocation in the slot (cached tokens are reserved to n_ctx, pass buffers are reused).
  std::span<const float> decode(int32_t token);
  // Speculative decoding (serve/spec/speculator.h, docs/speculation.md) through the backend's
  // draft / verify / roll_back: a ModelBackend needs a model with an MTP block
  // (std::logic_error), a bad cfg is std::invalid_argument. From the next pass on, prompt
  // passes also feed the drafter (and retain rollback states).
  Speculator& enable_speculation(const SpecConfig& cfg);
  void disable_speculation();
  Speculator* speculator() { return spec_.get(); }
  // What speculation holds in this slot (the speculator's buffers and the backend's drafter and
  // verification pass); 0 when off.
  size_t speculation_bytes() const;
  // Feeds `token` plus the drafts in ONE verified pass (a plain one-token pass when speculation
  // is switched off or nothing is drafted) and returns the tokens to emit: the accepted drafts,
  // then the next token, which is not fed yet (pass it to the next call) — exactly what
  // 1 + accepted rounds of decode() + picker.pick() would produce. At most max_tokens tokens;
  // an emitted stop token ends the list. Valid until the next call.
  // constraint: the request's grammar (serve/spec/draft_constraint.h) when it has one; the picker then
  // picks under the same grammar.
  std::span<const int32_t> decode_speculative(int32_t token, TokenPicker& picker, int64_t max_tokens = INT64_MAX,
                                              std::span<const int32_t> stop_tokens = {},
                                              DraftConstraint* constraint = nullptr, int max_drafts = INT_MAX);
  // Finishes the open request (also done by the next prefill) and returns its statistics.
  const RequestStats& end_request();

  // --- The slot's state as a whole (slot save/restore/erase, unloading; serve/lifecycle/state_file.h) ---
  // A copy of what the slot holds: tokens, images, the whole sequence and the checkpoints.
  PromptCacheEntry export_state() const;
  // Ends an open request, then replaces what the slot holds by e (its checkpoints become the
  // slot's, the newest beyond the capacity dropped). Throws std::length_error, before changing
  // anything, when e does not fit the context.
  void import_state(PromptCacheEntry&& e);
  // Ends an open request and forgets the tokens, images, sequence and checkpoints; returns how
  // many tokens it held.
  int64_t erase();
  // erase(), and the backend gives its memory back until the next prefill or import_state.
  void release_memory();

  const std::vector<int32_t>& cached_tokens() const { return cached_; }
  const std::vector<ImageChunk>& cached_images() const { return cached_images_; }
  std::span<const Checkpoint> checkpoints() const { return held_; }
  const RequestStats& stats() const { return stats_; }
  CheckpointPolicy& policy() { return *policy_; }
  const StateBackend& backend() const { return *backend_; }
  const SlotConfig& config() const { return cfg_; }
  size_t checkpoint_bytes_held() const;
  uint64_t requests() const { return request_; }
  bool request_open() const { return open_; }

 private:
  PrefillReport run_prefill(const Prompt& prompt, std::chrono::steady_clock::time_point t0);
  void restore_for(const Prompt& prompt);
  // Makes e what the slot holds (restore_for's prompt-cache load and import_state).
  void adopt(PromptCacheEntry&& e);
  void run_plan(const Prompt& prompt, const PrefillPlan& plan);
  void check_plan(const Prompt& prompt, const PrefillPlan& plan, int64_t R, int64_t N) const;
  void add_checkpoint(int64_t pos, CheckpointOrigin origin, RecurrentCheckpoint&& state);
  void drop_beyond(int64_t pos);
  RecurrentCheckpoint take_buffer();
  void recycle(RecurrentCheckpoint&& cp);

  std::unique_ptr<StateBackend> backend_;
  std::unique_ptr<CheckpointPolicy> policy_;
  SlotConfig cfg_;
  BatchPlanner planner_;
  PromptCache* cache_ = nullptr;

  std::vector<int32_t> cached_;  // == what the state consumed; reserved to n_ctx
  std::vector<ImageChunk> cached_images_;  // the images among them (their rows hold placeholders)
  std::vector<ImageChunk> prompt_chunks_;  // reused: the prompt's images as chunks
  std::vector<Checkpoint> held_; // ascending positions == creation order
  std::vector<int64_t> user_starts_;
  int64_t n_prompt_ = 0;
  int64_t cached_before_ = 0;  // cached tokens when the restore rule ran (after a cache load)
  std::vector<int32_t> previous_;  // those tokens, for the policy (reserved to n_ctx: one copy per request)
  uint64_t request_ = 0;
  uint64_t clock_ = 0;  // logical clock: ticks at every checkpoint creation and restore
  bool open_ = false;
  RequestStats stats_;

  // Reused per pass: cut positions and the states handed back there; one spare buffer so that
  // a checkpoint made after one was evicted reuses its memory.
  std::vector<int64_t> cuts_;
  std::vector<CheckpointOrigin> cut_origins_;
  std::vector<RecurrentCheckpoint> cut_states_;
  std::vector<RecurrentCheckpoint> spare_;

  std::unique_ptr<Speculator> spec_;  // declared last: gone before the backend it drives
  std::vector<int32_t> spec_tokens_;
};

}  // namespace tandem::serve
