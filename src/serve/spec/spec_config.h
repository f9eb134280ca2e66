// The speculative-decoding settings (docs/speculation.md). One struct read by the two halves of
// speculation: the Speculator (serve/spec/speculator.h: how many drafts, what is accepted) and the
// state backend that drafts and verifies (serve/slot/state_backend.h). The booleans after
// `p_min` are the paper's ablation switches (§4.3): each turns one mechanism off without
// changing the output, so that the ablations run in one binary.
#pragma once

namespace tandem::serve {

struct SpecConfig {
  bool enabled = true;      // off: a step is a plain one-token decode
  int draft_max = 3;        // k: drafts per step (rollback states retained: k + 1)
  int draft_min = 0;        // fewer drafts than this: none (a plain step)
  float p_min = 0.0f;       // stop drafting when the greedy draft's probability (over the top 10) is below
  // Draft with the model's MTP head; off (or a file without the block): only a request's grammar
  // drafts (the tokens it forces), and requests without one decode token by token.
  bool mtp_drafts = true;
  // A request's grammar proposes the tokens it forces as drafts (spec/constrained.md §6.4); off:
  // the MTP head drafts those positions too (filtered by the grammar, as every MTP draft is).
  bool forced_drafts = true;
  // A step may verify up to this many drafts when the grammar forces them (forced runs are long:
  // keys and punctuation, and nearly always accepted); MTP drafts stay at draft_max.
  int forced_max = 8;
  // Ablations.
  // Prompt passes retain the last draft_max + 1 recurrent states, as llama.cpp does whenever
  // speculation is on (n_rs_seq); rollback-aware: only their last draft_max tokens run per token
  // (chunked body, paper §4.3); off: the stock way, the whole pass per token.
  bool retain_prefill_states = true;
  bool rollback_aware_prefill = true;
  bool column_shared_verify = true;  // off: the verification pass runs one column at a time
  bool trimmed_head = true;          // draft over the file's trimmed draft head when it has one
  // Verification keeps a replay log instead of copying k states (Qwen35Model::forward_logged): a
  // rejection recomputes the state at the accepted position; off: snapshots, a rejection is a copy.
  bool replay_rollback = true;
};

}  // namespace tandem::serve
