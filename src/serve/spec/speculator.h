// Rollback-aware speculative decoding (paper §4.3, spec §6.4 and §7, docs/speculation.md): the
// decisions of a step, over a StateBackend that does the work (ModelBackend: the MTP head drafts,
// the trunk verifies; NullBackend: the dry run, with the drafts a request log says were accepted).
//
// One step, from a state at position P and the token `last` chosen for P (not yet fed):
//   1. draft: up to k = min(draft_max, max_tokens - 1, room) tokens, and no more than the
//      request's SpecLimits::max_drafts — under a request's grammar
//      (SpecLimits::constraint) first the tokens it forces (no MTP call), else the backend's
//      drafts (serve/spec/mtp_drafter.h: only tokens the grammar allows) followed by the run the grammar
//      forces after them; fewer than draft_min: none;
//   2. verify: ONE backend pass over [last, d1..dk] with every row's logits;
//   3. accept: the picker chooses the target's token at each row in order (greedy: argmax; with a
//      sampler: sample-and-match, so the output is what the same sampler would give without
//      speculation); matching drafts are accepted, the first mismatch (or the bonus after k
//      matches) ends the step;
//   4. roll back to P+1+j when j < k drafts were accepted (the backend recomputes or copies the
//      state there) — nothing is recomputed otherwise.
// The speculator holds no model state: the backend is the only writer of the sequence, and the
// Slot that owns both is the only owner of the token list.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "serve/slot/state_backend.h"
#include "serve/spec/spec_config.h"

namespace tandem::serve {

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

// Tests, benchmarks and the dry run: rewrites the proposed drafts (e.g. the known-correct
// continuation, wrong tokens, or what a request log says was accepted) after the backend drafted.
// pos: position of the first draft; the hook may resize the vector up to max_drafts (the step's
// MTP limit; up to the forced-run limit, SpecConfig::forced_max, for steps a grammar drafted) and
// must keep ids in the vocabulary.
using DraftHook = std::function<void(int64_t pos, int32_t last, int max_drafts, std::vector<int32_t>& drafts)>;

struct SpecLimits {
  int64_t max_tokens = INT64_MAX;           // emit at most this many tokens (>= 1)
  std::span<const int32_t> stop_tokens;     // an emitted stop token ends the step (never fed)
  // The tokens the state consumed ([0, n_past)): needed only after the state was replaced
  // (a prompt-cache load) to know the tokens of positions the drafter never saw.
  std::span<const int32_t> context;
  // The request's grammar (serve/spec/draft_constraint.h), at the state after `last`; null: none. The
  // picker must apply the same grammar's mask (serve/engine/grammar_picker.h): drafts only propose.
  DraftConstraint* constraint = nullptr;
  // The request's cap on drafts per step (MTP and forced alike), under draft_max; 0: no drafts.
  int64_t max_drafts = INT64_MAX;
};

struct SpecStep {
  // The accepted drafts, then the target's next token (the only one not fed):
  // exactly the tokens 1 + accepted plain decode steps would have produced. When the request's
  // grammar completed at an accepted draft there is no next token: every token was fed.
  std::vector<int32_t> tokens;
  int drafted = 0;   // drafts verified
  int accepted = 0;  // drafts accepted
  int forced = 0;    // of the drafts, the grammar's forced run (the last ones)
  int forced_accepted = 0;
  bool verified = false;  // a pass ran with drafts (false: plain one-token pass)
  bool rolled_back = false;  // fewer accepted than drafted: the state went back inside the pass
};

struct SpecCounters {
  int64_t steps = 0, verify_passes = 0, drafts_proposed = 0, drafts_accepted = 0, tokens = 0, roll_backs = 0;
  int64_t drafts_forced = 0, drafts_forced_accepted = 0;  // the grammar's share of proposed / accepted
  // draft_ms: the backend's draft() calls, which include the MTP head's catch-up with the trunk
  // (MtpDrafter's DrafterCounters::sync_ms is that part of it).
  double draft_ms = 0, verify_ms = 0, rollback_ms = 0;
};

class Speculator {
 public:
  // The backend must outlive this and have speculation started (StateBackend::start_speculation).
  Speculator(StateBackend& backend, SpecConfig cfg = {});

  const SpecConfig& config() const { return cfg_; }
  // Validates (std::invalid_argument); the caller hands the same config to the backend.
  void set_config(const SpecConfig& cfg);
  static void validate(const SpecConfig& cfg);
  void set_draft_hook(DraftHook hook) { hook_ = std::move(hook); }

  // One decode step from `last` (the token chosen for position n_past, not yet fed); see the
  // header comment. Throws std::invalid_argument (bad token, max_tokens < 1) or
  // std::length_error (context full) before touching the state.
  void step(int32_t last, TokenPicker& picker, SpecStep& out, const SpecLimits& lim = {});

  // Drafting alone (tests, benchmarks): up to max_drafts tokens from `last` at n_past; the
  // state does not move. The hook is not applied.
  const std::vector<int32_t>& draft(int32_t last, int max_drafts, std::span<const int32_t> context = {});

  const SpecCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }
  // The step's own buffers (the backend reports what drafting and verification hold).
  size_t bytes() const;

 private:
  StateBackend& backend_;
  SpecConfig cfg_;
  DraftHook hook_;
  std::vector<int32_t> drafts_, batch_, forced_;
  SpecCounters counters_;
};

}  // namespace tandem::serve
