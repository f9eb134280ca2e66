// The MTP head as a drafter (paper §4.3, spec §6.4 and §7): ModelBackend's half of speculative
// decoding. It keeps the head's KV cache in step with the trunk and proposes drafts; it only
// reads the trunk's sequence (the backend that owns both is the only writer).
//
// MTP row p is (token x_p, the trunk's final normed hidden h[p-1]) — the target's hidden rows
// shifted by one; the pending hidden of the next row is h[P-1]. The drafter records x_p and h[p]
// of every trunk pass the backend runs (observe_pass) and replays the missing MTP rows in one
// batch right before it drafts. After a restore the rows before the restored position stay;
// after a prompt-cache load the tokens come from the caller's context and rows whose trunk
// hidden is unknown use zeros (drafts only get worse; the output never changes: verification
// decides every token).
//
// A draft: the head runs row (last, h[P-1]) at P, then its own chained rows, proposing up to
// max_drafts tokens greedily (over the trimmed draft head when the file has one; a row is mapped
// back to its token id), stopping early below p_min.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "serve/spec/draft_constraint.h"
#include "serve/spec/spec_config.h"

namespace tandem::serve {

struct DrafterCounters {
  int64_t mtp_sync_rows = 0;  // MTP rows replayed from trunk passes
  double sync_ms = 0, draft_ms = 0;
};

class MtpDrafter {
 public:
  // The model must have an MTP block (std::logic_error otherwise); model and trunk outlive this.
  MtpDrafter(Qwen35Model& model, const SequenceState& trunk, const SpecConfig& cfg);

  void set_config(const SpecConfig& cfg) { cfg_ = cfg; }
  // The head drafts run over (trimmed when the file has one and the switch is on) and whether
  // it is the trimmed one.
  const WeightMatrix& draft_head() const;
  bool drafting_trimmed() const;

  // Prompt passes ask for hidden rows (and retained rollback states) while speculation is on.
  void configure_prompt_pass(int64_t n_tokens, ForwardOptions& opt) const;
  // The trunk ran tokens at positions pos0 ...; out.hidden holds their rows when asked for.
  void observe_pass(int64_t pos0, std::span<const int32_t> tokens, const ForwardOutput& out);
  // The trunk went back to position pos with the same tokens before it (restore, reset, roll-back).
  void invalidate_from(int64_t pos);

  // Brings the head up to the trunk (context: the tokens of positions it never saw) and
  // proposes up to max_drafts tokens after `last` at the trunk's n_past. With a constraint (a
  // request's grammar, StateBackend::draft): each draft is the best of the head's top 10 it
  // allows, and drafting stops where it forces tokens or is complete.
  void draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
             DraftConstraint* constraint = nullptr);

  const MtpState& mtp_state() const { return *mtp_; }
  const DrafterCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }
  // The MTP KV cache, the per-position token/hidden record and the draft buffers.
  size_t bytes() const;

 private:
  void sync_mtp(std::span<const int32_t> context);

  Qwen35Model& model_;
  const SequenceState& trunk_;
  SpecConfig cfg_;
  std::unique_ptr<MtpState> mtp_;
  int64_t n_embd_;

  // What the trunk consumed, per position: token and final normed hidden, with validity flags.
  std::vector<int32_t> tok_;
  std::vector<char> have_tok_, have_hid_;
  std::vector<float> hid_;

  // Reused buffers.
  std::vector<int32_t> rows_tok_;
  std::vector<float> rows_hid_, chain_h_;
  std::vector<int32_t> forced_;  // a constraint's forced run (only its emptiness matters here)
  ForwardOutput mout_;
  DrafterCounters counters_;
};

}  // namespace tandem::serve
