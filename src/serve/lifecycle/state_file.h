// One serving state on disk (issue 27, docs/serving.md "States on disk"): a slot's tokens, the
// images among them, the whole sequence (recurrent state + KV rows) and its checkpoints — what a
// PromptCacheEntry holds — so that a restarted server restores the rules instead of recomputing them.
//
// Layout (host byte order; a cache of this machine's states, not an interchange format):
//   "TNDMSTAT" | u32 version | u32 0 | u64 model fingerprint | string state layout |
//   u64 payload bytes | u64 payload checksum | u64 header checksum | payload
//   payload: tokens | images | the backend's sequence (SavedSequence::write) | checkpoints
// A file is written under a temporary name, synced and renamed (a crash leaves the old file or
// the new one, never a torn one). Reading checks, in order, the magic and version, the model
// fingerprint and the layout (named in the error), the size against the header (truncation),
// every count and position against the payload and the context, and the checksum; anything
// wrong is a StateFileError naming the file, and nothing of it is used.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "serve/slot/prompt_cache.h"
#include "serve/slot/state_backend.h"

namespace tandem::serve {

// What a state file must have been written under to be loaded.
struct StateFileIdentity {
  uint64_t model_fingerprint = 0;  // model_fingerprint() of the model file
  std::string layout;              // StateBackend::state_layout()
};

class StateFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr uint32_t kStateFileVersion = 1;

// Writes e to path atomically; returns the file's size. Throws StateFileError (the directory is
// not writable, the disk is full), leaving no partial file behind.
uint64_t write_state_file(const std::filesystem::path& path, const PromptCacheEntry& e, const StateFileIdentity& id);

// Reads a file written by write_state_file for a backend of `id`'s model and layout (backend reads
// the sequence and gives the context it must fit). Throws StateFileError.
PromptCacheEntry read_state_file(const std::filesystem::path& path, const StateFileIdentity& id,
                                 const StateBackend& backend);

}  // namespace tandem::serve
