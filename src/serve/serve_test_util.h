// Helpers for the serve/ tests: token streams built from named segments, and dry-run slots.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "serve/backend/dry_run.h"
#include "serve/backend/null_backend.h"
#include "serve/slot/slot.h"

namespace tandem::serve::testing {

// `len` tokens that belong to segment `id` (distinct segments never share a token).
inline std::vector<int32_t> seg(int32_t id, int64_t len) {
  std::vector<int32_t> t(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i) t[static_cast<size_t>(i)] = id * 100000 + static_cast<int32_t>(i);
  return t;
}

inline std::vector<int32_t> cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Step k of an agent-like episode: rules (segment 1, 300 tokens; the user message starts at 10),
// the history entries, then the screen (segment `screen`, 300 tokens).
inline std::vector<int32_t> episode_step(std::initializer_list<std::vector<int32_t>> history, int32_t screen) {
  std::vector<int32_t> p = seg(1, 300);
  for (const auto& h : history) p.insert(p.end(), h.begin(), h.end());
  const auto s = seg(screen, 300);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

constexpr size_t kCheckpointBytes = 1000;
constexpr size_t kKvBytesPerToken = 10;

// llama.cpp's batching (two tail cuts, no consolidation): what these tests' pass counts are written for.
inline SlotConfig stock_slot() {
  SlotConfig c;
  c.batch.consolidate = false;
  return c;
}

inline std::unique_ptr<Slot> dry_slot(std::unique_ptr<CheckpointPolicy> policy, SlotConfig cfg = stock_slot(),
                                      size_t checkpoint_bytes = kCheckpointBytes) {
  return make_dry_run_slot(std::move(policy), cfg, NullBackend(1 << 20, checkpoint_bytes, kKvBytesPerToken));
}

// Prefill + feed `n_out` distinct output tokens + end; returns the request's statistics.
inline RequestStats request(Slot& slot, const std::vector<int32_t>& prompt, std::vector<int64_t> user_starts,
                            int n_out = 0, int32_t out_id = 999) {
  slot.prefill(Prompt{prompt, user_starts});
  for (int i = 0; i < n_out; ++i) slot.decode(out_id * 100000 + i);
  return slot.end_request();
}

inline std::vector<int64_t> positions(std::span<const Checkpoint> held) {
  std::vector<int64_t> p;
  for (const auto& c : held) p.push_back(c.pos);
  return p;
}

using P = std::vector<int64_t>;

}  // namespace tandem::serve::testing
