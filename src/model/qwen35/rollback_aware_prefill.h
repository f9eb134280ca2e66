// Rollback-aware prefill (paper §4.3): how one pass of T tokens runs the Gated DeltaNet
// recurrence so that the states it must hand back exist, and no more of it runs per token than
// that needs.
//
// A pass hands back the recurrent state at its cut positions (checkpoints a policy asked for) and,
// while speculation is on, the states after each of its last K tokens (the rollback states a
// rejected draft goes back to). The chunked delta-rule body only exposes the state at the end of
// what it ran, so the pass is cut into segments: one ends at every cut, and the last
// max(K - 1, per_token_tail) tokens (the tail) run the per-token body, where every state is seen
// (the state before the tail is the oldest rollback state, at the end of the chunked part). The
// stock way (llama.cpp's) is the whole pass per token whenever states are kept; here only the tail
// is. `per_token_tail` gives every prompt pass of a server the same tail whether or not it keeps
// states, so that speculation on and off compute the same bits (serve::ModelBackend).
//
// A pure function of the pass's shape: Qwen35Model::forward computes it once per pass and every
// GDN layer walks the same segments.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem {

struct DeltaRuleSegment {
  int64_t begin = 0, end = 0;  // tokens [begin, end) of the pass
  bool per_token = false;      // the per-token body (every state seen) or the chunked one
};

// cuts: relative positions in (0, T], strictly increasing (the caller validated them);
// rollback_states: K >= 0 states kept after the last K tokens; per_token_tail >= 0;
// chunked: whether the chunked body runs at all (false: every segment per token).
// Segments cover [0, T) in order, end at every cut and where the tail starts.
void plan_delta_rule_segments(int64_t T, std::span<const int64_t> cuts, int64_t rollback_states,
                              int64_t per_token_tail, bool chunked, std::vector<DeltaRuleSegment>& out);

// The rollback slot that holds the state after the pass's first `after_tokens` tokens: slot
// s = T - after_tokens (slot 0 = the state after the whole pass); -1 when no slot of the K kept
// holds it.
inline int64_t rollback_slot(int64_t T, int64_t after_tokens, int64_t rollback_states) {
  const int64_t s = T - after_tokens;
  return s >= 0 && s < rollback_states ? s : -1;
}

}  // namespace tandem
