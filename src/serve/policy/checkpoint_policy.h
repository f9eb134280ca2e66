// The decision half of state reuse. A CheckpointPolicy is asked two questions per request:
//   1. plan_prefill: given where the slot restored (R) and where the prompt diverged (L),
//      where are prompt batches cut and at which positions are checkpoints taken;
//   2. evictions: a new checkpoint is about to join a full (or thinning) list: which go.
// Restoring, copying and truncating are the slot's mechanism (StateBackend); the policies
// never touch a state, which is what lets the replay simulator run them without a model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "serve/policy/batch_planner.h"
#include "serve/slot/checkpoint.h"
#include "serve/slot/prompt.h"

namespace tandem::serve {

// What the slot knows when a prompt is about to be prefilled (after the restore rule ran).
struct PrefillContext {
  Prompt prompt;
  int64_t lcp = 0;             // L: common prefix of the prompt and the slot's cached tokens
  int64_t restore_pos = 0;     // R: where the state now is (checkpoint, live state, or 0)
  int64_t cached_before = 0;   // the slot's cached token count before the restore
  std::span<const int32_t> previous;  // those tokens (what L was measured against; image rows as placeholders)
  std::span<const Checkpoint> checkpoints;  // held after the restore: all at positions <= R, ascending
  const BatchPlanner* planner = nullptr;
  int capacity = 0;            // ctx_checkpoints of the slot
  uint64_t request = 0;        // index of this request in the slot's life
};

// When a checkpoint is copied: before the batch starting at pos runs (llama.cpp's way; the
// state at the batch start), or handed back by the pass that crosses pos (ForwardOptions::cuts).
enum class SaveWhen : uint8_t { BeforeBatch, InPass };

struct PlannedSave {
  int64_t pos;
  SaveWhen when;
  CheckpointOrigin origin;
};

struct PrefillPlan {
  BatchPlan batches;
  std::vector<PlannedSave> saves;  // ascending positions, each in [R, N]
};

// The slot at the end of a request (prompt + generated tokens).
struct RequestRecord {
  std::span<const int32_t> tokens;  // everything the state consumed
  int64_t n_prompt = 0;
  std::span<const int64_t> user_starts;
};

class CheckpointPolicy {
 public:
  virtual ~CheckpointPolicy() = default;
  virtual std::string_view name() const = 0;

  virtual PrefillPlan plan_prefill(const PrefillContext& ctx) = 0;

  // `incoming` is about to be added to `held` (ascending positions; capacity >= 1). Returns the
  // indices into held (ascending) to evict first; afterwards fewer than `capacity` may remain.
  // `now` is the slot's logical clock, greater than every last_use.
  virtual std::vector<size_t> evictions(std::span<const Checkpoint> held, const Checkpoint& incoming, int capacity,
                                        uint64_t now) = 0;

  // Called once per request when the slot moves on (Marconi records its history here).
  virtual void on_request_end(const RequestRecord& record) {}
};

// Oldest-first eviction down to capacity - 1, skipping indices already in `evict` (kept sorted).
void evict_oldest_to_fit(std::span<const Checkpoint> held, int capacity, std::vector<size_t>& evict);

}  // namespace tandem::serve
