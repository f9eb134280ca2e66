// A checkpoint held by a slot: the recurrent state at a token position plus the
// bookkeeping the policies decide on (who made it, when it was last used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/sequence_state.h"

namespace tandem::serve {

// Why a checkpoint was made (reported, and used by nothing but tests and logs).
enum class CheckpointOrigin : uint8_t {
  UserMessage,  // stock: a batch starting at a user message
  NearEnd,      // stock: a batch leaving fewer than n_ubatch prompt tokens after it
  Divergence,   // divergence: the state at L
  Branch,       // marconi: the state where the prompt branches from the cached tokens
  Leaf,         // marconi: the state after the last prompt token
  BeforeImage,  // divergence with --checkpoint-before-image: the state at an image's first row
  Forecast,     // divergence with --checkpoint-forecast: where the next request is predicted to diverge
  Recent,       // divergence with --checkpoint-forecast: where the prompt left the closest recent prompt
};
// The last origin: what a state file may record (serve/lifecycle/state_file.cpp). Keep it the last value.
inline constexpr CheckpointOrigin kLastCheckpointOrigin = CheckpointOrigin::Recent;
std::string_view to_string(CheckpointOrigin origin);

struct Checkpoint {
  int64_t pos = -1;           // the state after consuming tokens [0, pos)
  RecurrentCheckpoint state;  // the copy itself; empty under the dry-run backend
  size_t bytes = 0;           // bytes the copy holds (reported the same by every backend)
  uint64_t request = 0;       // index of the request that made it
  uint64_t last_use = 0;      // slot's logical clock at creation or at the last restore from it
  CheckpointOrigin origin = CheckpointOrigin::NearEnd;
};

}  // namespace tandem::serve
