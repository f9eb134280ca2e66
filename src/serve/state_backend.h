// The mechanism behind a slot: the operations a checkpoint policy's decisions turn into
// (run a pass handing back states at cut positions, copy the recurrent state out, go back
// to a copy, save and load the whole sequence). Policies never see this interface.
//
// Two implementations: ModelBackend runs Qwen35Model on a SequenceState; NullBackend only
// tracks positions and byte counts, so that the replay simulator runs the very same Slot,
// policies and planner without a network and reproduces the server's counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "model/sequence_state.h"

namespace tandem::serve {

// A whole sequence (recurrent state + the KV rows in use), as the prompt cache holds it.
class SavedSequence {
 public:
  virtual ~SavedSequence() = default;
  virtual size_t bytes() const = 0;
};

class StateBackend {
 public:
  virtual ~StateBackend() = default;

  virtual int64_t n_ctx() const = 0;
  virtual int64_t n_past() const = 0;
  // Token ids must be below this; 0 = any id (the dry run has no vocabulary).
  virtual int64_t n_vocab() const = 0;
  // Bytes of one recurrent-state copy (a checkpoint).
  virtual size_t checkpoint_bytes() const = 0;
  // Bytes of a saved sequence of n_tokens tokens (recurrent state + KV rows).
  virtual size_t sequence_bytes(int64_t n_tokens) const = 0;

  // Empty sequence at position 0.
  virtual void reset() = 0;
  // Copies the recurrent state out; cp.pos = n_past(). Reuses cp's buffer.
  virtual void save(RecurrentCheckpoint& cp) = 0;
  // Recurrent state copied back in, KV truncated to cp.pos (<= n_past()).
  virtual void restore(const RecurrentCheckpoint& cp) = 0;
  // One model pass over tokens at positions n_past() ...; cut_states[i] receives the state at
  // cuts[i] (ascending, in (n_past, n_past + size]); buffers already in cut_states are reused.
  // want_logits: keep the last token's logits for logits().
  virtual void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
                   std::span<RecurrentCheckpoint> cut_states) = 0;
  // Logits of the last token of the last run with want_logits (empty for the dry run).
  virtual std::span<const float> logits() const = 0;

  virtual std::unique_ptr<SavedSequence> save_sequence() const = 0;
  virtual void load_sequence(const SavedSequence& saved) = 0;
};

}  // namespace tandem::serve
