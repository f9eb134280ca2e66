// The mechanism behind a slot: the operations a checkpoint policy's decisions and a
// speculator's steps turn into (run a pass handing back states at cut positions, copy the
// recurrent state out, go back to a copy, save and load the whole sequence; draft, verify
// drafts in one pass, roll back to the accepted position). Policies never see this interface;
// the Slot is its only user and the only owner of the backend's state.
//
// Two implementations: ModelBackend runs Qwen35Model on a SequenceState; NullBackend only
// tracks positions and byte counts, so that the replay simulator runs the very same Slot,
// policies, planner and Speculator without a network and reproduces the server's counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "model/sequence_state.h"
#include "runtime/binary_io.h"
#include "serve/spec/draft_constraint.h"
#include "serve/spec/spec_config.h"

namespace tandem::serve {

// A whole sequence (recurrent state + the KV rows in use), as the prompt cache holds it.
class SavedSequence {
 public:
  virtual ~SavedSequence() = default;
  virtual size_t bytes() const = 0;
  virtual int64_t n_tokens() const = 0;  // the rows it holds
  // Which backend kind wrote it: load_sequence accepts only its own kind's.
  virtual std::string_view kind() const = 0;
  // Its bytes in a state file (serve/lifecycle/state_file.h); StateBackend::read_sequence reads them back.
  virtual void write(BinaryWriter& w) const = 0;
};

// The rows of one verification pass: row i holds the logits after the pass's token i.
// A dry run has no logits (n_vocab 0: every row is empty).
struct VerifiedRows {
  const float* data = nullptr;
  int64_t n_rows = 0;
  int64_t n_vocab = 0;
  std::span<const float> row(int64_t i) const {
    return n_vocab > 0 ? std::span<const float>(data + i * n_vocab, static_cast<size_t>(n_vocab)) : std::span<const float>();
  }
};

// What the speculation operations did to the state (the dry run's counts, reported by every backend).
struct SpecPassCounts {
  int64_t verify_passes = 0;   // verify() calls with more than one token
  int64_t roll_backs = 0;      // roll_back() calls
};

// Some rows of one image for StateBackend::run_image.
struct ImageRowsPiece {
  const float* rows = nullptr;  // n_rows x the model's width (null under the dry run)
  int64_t n_rows = 0;
  int nx = 0, ny = 0;       // the image's grid
  int64_t first_row = 0;    // the first row's index in the image
  int32_t placeholder = 0;  // the token the rows hold in the slot's list (serve/slot/prompt.h)
};

class StateBackend {
 public:
  virtual ~StateBackend() = default;

  virtual int64_t n_ctx() const = 0;
  virtual int64_t n_past() const = 0;
  // Token ids must be below this; 0 = any id (the dry run has no vocabulary).
  virtual int64_t n_vocab() const = 0;
  // Floats per embedding row (an image row, run_image); 0 for the dry run.
  virtual int64_t row_width() const = 0;
  // Bytes of one recurrent-state copy (a checkpoint).
  virtual size_t checkpoint_bytes() const = 0;
  // Bytes of a saved sequence of n_tokens tokens (recurrent state + KV rows).
  virtual size_t sequence_bytes(int64_t n_tokens) const = 0;
  // Memory the live sequence holds: its allocated KV cache and its recurrent state.
  virtual size_t kv_bytes() const = 0;
  virtual size_t recurrent_bytes() const = 0;

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
  // The same pass over rows [first_row, first_row + n_rows) of an image (Qwen35Model::forward_image:
  // the rows enter as they are, at the image's M-RoPE positions); `rows` is null under the dry run.
  // An image may be run in several pieces; text may follow only once its last row is in.
  virtual void run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                         std::span<RecurrentCheckpoint> cut_states) = 0;
  // Logits of the last token of the last run with want_logits (empty for the dry run).
  virtual std::span<const float> logits() const = 0;

  virtual std::unique_ptr<SavedSequence> save_sequence() const = 0;
  virtual void load_sequence(const SavedSequence& saved) = 0;

  // --- States on disk and unloading (serve/lifecycle/state_file.h, Engine's --unload-idle-s) ---
  // What a state file records of the state's shape ("kind: sizes"), so that a file written under
  // another layout is refused by name before any of it is read.
  virtual std::string state_layout() const = 0;
  // A saved sequence read back from a state file (what SavedSequence::write wrote, with this
  // layout). Throws BinaryFormatError (truncated, corrupted, or not fitting this context).
  virtual std::unique_ptr<SavedSequence> read_sequence(BinaryReader& r) const = 0;
  // Gives the live sequence's memory back (the KV cache above all), leaving an empty sequence at
  // position 0; reacquire_memory() allocates it again (a no-op when held). The Slot reacquires
  // before any pass, so a released backend is only ever seen empty.
  virtual void release_memory() = 0;
  virtual void reacquire_memory() = 0;

  // --- Speculative decoding (serve/spec/speculator.h decides; the backend drafts and verifies) ---
  // Drafting under cfg from now on (again: the new cfg): prompt passes then also keep what the
  // drafter and a later rollback need (ModelBackend: the MTP head's input rows, the last
  // draft_max + 1 states). Throws std::logic_error when the backend cannot draft (no MTP head).
  virtual void start_speculation(const SpecConfig& cfg) = 0;
  virtual void stop_speculation() = 0;
  // Up to max_drafts tokens proposed to follow `last` (the token chosen for position n_past(),
  // not fed yet), into drafts (cleared first). context: the tokens the state consumed, needed
  // only when the drafter never saw them (after a prompt-cache load). constraint (may be null):
  // a request's grammar — each draft is the drafter's best candidate it allows (drafting stops
  // when none is), and drafting stops before a position where it forces tokens or is complete
  // (the speculator appends the forced run); each draft advances it.
  virtual void draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
                     DraftConstraint* constraint = nullptr) = 0;
  // One pass over tokens (the last token and its drafts) at n_past(), with every row's logits
  // (one row for a single token); advances the state by tokens.size() and keeps what
  // roll_back needs. The rows stay valid until the next pass.
  virtual VerifiedRows verify(std::span<const int32_t> tokens) = 0;
  // After verify(): puts the state back to position pos, inside the verified pass
  // (pos0 < pos < pos0 + tokens.size()), as if only the tokens before pos had been fed.
  virtual void roll_back(int64_t pos) = 0;
  // Bytes the speculation operations hold (MTP cache, verification buffers); 0 when off.
  virtual size_t speculation_bytes() const = 0;
  virtual const SpecPassCounts& spec_counts() const = 0;
};

}  // namespace tandem::serve
