// Rollback-aware speculative decoding with the MTP head (paper §4.3, spec §6.4 and §7,
// docs/speculation.md).
//
// One step, from a trunk state at position P and the token `last` chosen for P (not yet fed):
//   1. draft: the MTP head runs row (last, h[P-1]) at P, then its own chained rows, proposing up
//      to draft_max tokens greedily (over the trimmed draft head when the file has one; a row is
//      mapped back to its token id), stopping early below p_min;
//   2. verify: ONE trunk pass over [last, d1..dk] with LogitsMode::All and rollback_states = k+1;
//   3. accept: the picker chooses the target's token at each row in order (greedy: argmax; with a
//      sampler: sample-and-match, so the output is what the same sampler would give without
//      speculation); matching drafts are accepted, the first mismatch (or the bonus after k
//      matches) ends the step;
//   4. roll back to P+1+j: set_recurrent(rollback state k-j) + truncate_kv, and the MTP head's
//      rows beyond its last trunk-consistent row are dropped — nothing is recomputed.
//
// The MTP head's KV cache stays in step with the trunk as spec §7.3 describes: MTP row p is
// (token x_p, the trunk's final normed hidden h[p-1]) — the target's hidden rows shifted by one;
// the pending hidden of the next row is h[P-1]. The speculator records x_p and h[p] of every
// trunk pass it sees (prompt passes through PassObserver, its own verification passes) and
// replays the missing MTP rows in one batch right before it drafts. After a restore the rows
// before the restored position stay; after a prompt-cache load the tokens come from the
// caller's context and rows whose trunk hidden is unknown use zeros (drafts only get worse;
// the output never changes: verification decides every token).
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "model/qwen35_model.h"
#include "serve/model_backend.h"

namespace tandem::serve {

struct SpecConfig {
  bool enabled = true;      // off: step() is a plain one-token decode
  int draft_max = 3;        // k: drafts per step (rollback states retained: k + 1)
  int draft_min = 0;        // fewer drafts than this: none (a plain step)
  float p_min = 0.0f;       // stop drafting when the greedy draft's probability (over the top 10) is below
  // Prompt passes retain the last draft_max + 1 recurrent states, as llama.cpp does whenever
  // speculation is on (n_rs_seq); rollback-aware: only their last draft_max tokens run per token
  // (chunked body, paper §4.3); off: the stock way, the whole pass per token.
  bool retain_prefill_states = true;
  bool rollback_aware_prefill = true;
  bool column_shared_verify = true;  // off: the verification pass runs one column at a time
  bool trimmed_head = true;          // draft over the file's trimmed draft head when it has one
  // Verification keeps a replay log instead of copying k states (RollbackMode::Replay): a
  // rejection recomputes the state at the accepted position; off: snapshots, a rejection is a copy.
  bool replay_rollback = true;
};

// The target model's decision for one row of full-vocabulary logits.
class TokenPicker {
 public:
  virtual ~TokenPicker() = default;
  virtual int32_t pick(std::span<const float> logits) = 0;
  // The token was appended to the output (a sampler's penalty history).
  virtual void accept(int32_t token) {}
};

// argmax, ties to the lowest id.
class GreedyPicker final : public TokenPicker {
 public:
  int32_t pick(std::span<const float> logits) override;
};

// Tests and benchmarks: rewrites the proposed drafts (e.g. the known-correct continuation, or
// wrong tokens) after the MTP head ran. pos: position of the first draft; the hook may resize
// the vector up to max_drafts (the step's limit) and must keep ids in the vocabulary.
using DraftHook = std::function<void(int64_t pos, int32_t last, int max_drafts, std::vector<int32_t>& drafts)>;

struct SpecLimits {
  int64_t max_tokens = INT64_MAX;           // emit at most this many tokens (>= 1)
  std::span<const int32_t> stop_tokens;     // an emitted stop token ends the step (never fed)
  // The tokens the trunk state consumed ([0, n_past)): needed only after the state was replaced
  // (a prompt-cache load) to know the tokens of positions the speculator never saw.
  std::span<const int32_t> context;
};

struct SpecStep {
  // The accepted drafts, then the target's next token (the only one not fed to the trunk):
  // exactly the tokens 1 + accepted plain decode steps would have produced.
  std::vector<int32_t> tokens;
  int drafted = 0;   // drafts verified
  int accepted = 0;  // drafts accepted
  bool verified = false;  // a pass ran with drafts (false: plain one-token pass)
};

struct SpecCounters {
  int64_t steps = 0, verify_passes = 0, drafts_proposed = 0, drafts_accepted = 0, tokens = 0;
  int64_t mtp_sync_rows = 0;  // MTP rows replayed from trunk passes
  double sync_ms = 0, draft_ms = 0, verify_ms = 0, rollback_ms = 0;
};

class Speculator final : public PassObserver {
 public:
  // The model must have an MTP block (std::logic_error otherwise); model and state outlive this.
  Speculator(Qwen35Model& model, SequenceState& state, SpecConfig cfg = {});

  const SpecConfig& config() const { return cfg_; }
  void set_config(const SpecConfig& cfg);  // validates (std::invalid_argument)
  void set_draft_hook(DraftHook hook) { hook_ = std::move(hook); }
  // The head drafts run over (trimmed when the file has one and the switch is on), its bytes
  // (the output matrix a draft step reads) and whether it is the trimmed one.
  const WeightMatrix& draft_head() const;
  bool drafting_trimmed() const;

  // PassObserver: prompt passes ask for hidden rows (and retained rollback states) while
  // speculation is on, and are recorded for the MTP head.
  void configure_pass(int64_t n_tokens, ForwardOptions& opt) override;
  void observe_pass(int64_t pos0, std::span<const int32_t> tokens, const ForwardOutput& out) override;
  void on_truncate(int64_t pos) override;
  void on_replace() override;

  // One decode step from `last` (the token chosen for position n_past, not yet fed); see the
  // header comment. Throws std::invalid_argument (bad token, max_tokens < 1) or
  // std::length_error (context full) before touching the state.
  void step(int32_t last, TokenPicker& picker, SpecStep& out, const SpecLimits& lim = {});

  // Drafting alone (benchmarks): brings the MTP head up to the trunk, proposes up to max_drafts
  // tokens from `last` at n_past and drops the temporary rows again. The hook is not applied.
  const std::vector<int32_t>& draft(int32_t last, int max_drafts, std::span<const int32_t> context = {});

  const SpecCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }
  const MtpState& mtp_state() const { return *mtp_; }
  // Memory the speculator holds: the MTP KV cache, the per-position token/hidden record, the
  // verification pass's output (logits and hidden rows of k+1 tokens, its replay log or
  // rollback states) and the draft buffers. Fixed after the first steps (buffers are reused).
  size_t bytes() const;

 private:
  void sync_mtp(std::span<const int32_t> context);
  void run_drafts(int32_t last, int max_drafts);
  void invalidate_from(int64_t pos);

  Qwen35Model& model_;
  SequenceState& state_;
  SpecConfig cfg_;
  DraftHook hook_;
  std::unique_ptr<MtpState> mtp_;
  int64_t n_embd_;

  // What the trunk consumed, per position: token and final normed hidden, with validity flags.
  std::vector<int32_t> tok_;
  std::vector<char> have_tok_, have_hid_;
  std::vector<float> hid_;

  // Reused buffers.
  std::vector<int32_t> drafts_, batch_, rows_tok_;
  std::vector<float> rows_hid_, chain_h_;
  ForwardOptions vopt_;
  ForwardOutput vout_, mout_;
  SpecCounters counters_;
};

}  // namespace tandem::serve
