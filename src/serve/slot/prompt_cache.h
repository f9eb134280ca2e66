// The host prompt cache (serving.md §3.1, llama.cpp's server_prompt_cache): whole slot states
// of earlier prompts (tokens + full sequence state + checkpoint list) within a byte budget.
//
// With one slot, llama.cpp consults it when the new prompt is not similar to the slot (common
// prefix <= slot_similarity of the prompt) or would keep less than half of the slot's tokens:
// the slot is saved as an entry, then the best entry is loaded if it keeps >= min_keep of its
// own tokens and beats the slot on both kept and covered fractions. Loading moves the entry into
// the slot (it leaves the cache). Entries go oldest first while over budget (one always stays).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "serve/slot/checkpoint.h"
#include "serve/slot/prompt.h"
#include "serve/slot/state_backend.h"

namespace tandem::serve {

// Which entry a prompt loads. Fractions: llama.cpp's rule above. Restorable (issue 30): the entry
// from which the prompt restores furthest — the entry's whole state when the prompt extends all
// of it, else its newest checkpoint at or below the common prefix (the same restore rule as the
// slot's) — when that beats what the slot itself restores. With a checkpoint at where the next
// request diverges, an entry's value is that checkpoint, not the share of its tokens the prompt
// keeps: an agent's action prompt after its summary prompt shares a few hundred tokens of a
// several-thousand-token entry, below llama.cpp's 25%, and still restores its own prefix from it.
// Auto: resolved by the engine (serve/engine/engine.h: Restorable under the divergence policy, else
// Fractions); the cache itself treats it as Fractions.
enum class CacheSelect : uint8_t { Auto, Fractions, Restorable };

struct PromptCacheOptions {
  size_t budget_mib = 512;
  CacheSelect select = CacheSelect::Fractions;
  double min_keep = 0.25;        // an entry must keep this fraction of its own tokens
  double slot_similarity = 0.1;  // llama.cpp's --slot-prompt-similarity
  double save_below_keep = 0.5;  // a similar slot is saved when it would keep less than this
};

struct PromptCacheEntry {
  std::vector<int32_t> tokens;
  std::vector<ImageChunk> images;  // the images among the tokens
  std::unique_ptr<SavedSequence> state;
  std::vector<Checkpoint> checkpoints;
  size_t bytes() const;
};

// Where a prompt restores from a sequence holding `tokens` with these checkpoints: the whole
// state when the prompt's first N - 1 tokens extend all of it, else the newest checkpoint at or
// below min(common prefix, N - 1), else 0 (the slot's restore rule, serving.md §2).
int64_t restorable_pos(std::span<const int32_t> tokens, std::span<const ImageChunk> images,
                       std::span<const Checkpoint> checkpoints, std::span<const int32_t> prompt,
                       std::span<const ImageChunk> prompt_images);

class PromptCache {
 public:
  explicit PromptCache(PromptCacheOptions opt = {});

  // Whether a slot holding `cached` (with images) goes through the cache before serving `prompt`.
  bool should_update(std::span<const int32_t> cached, std::span<const ImageChunk> cached_images,
                     std::span<const int32_t> prompt, std::span<const ImageChunk> prompt_images) const;
  // Saves the slot as an entry; returns the bytes copied (0 when an entry already holds all of
  // these tokens). Entries whose tokens are a prefix of these are removed as obsolete. Images match
  // only whole (common_prefix_with_images).
  size_t save(std::span<const int32_t> tokens, std::span<const ImageChunk> images, const StateBackend& backend,
              std::span<const Checkpoint> checkpoints);
  // Removes and returns the best entry for `prompt` that beats a slot holding `slot_tokens` (and,
  // for CacheSelect::Restorable, `slot_checkpoints`).
  std::optional<PromptCacheEntry> take_best(std::span<const int32_t> slot_tokens, std::span<const ImageChunk> slot_images,
                                            std::span<const int32_t> prompt, std::span<const ImageChunk> prompt_images,
                                            std::span<const Checkpoint> slot_checkpoints = {});
  // The same for sequences without images.
  bool should_update(std::span<const int32_t> cached, std::span<const int32_t> prompt) const {
    return should_update(cached, {}, prompt, {});
  }
  size_t save(std::span<const int32_t> tokens, const StateBackend& backend, std::span<const Checkpoint> checkpoints) {
    return save(tokens, {}, backend, checkpoints);
  }
  std::optional<PromptCacheEntry> take_best(std::span<const int32_t> slot_tokens, std::span<const int32_t> prompt) {
    return take_best(slot_tokens, {}, prompt, {});
  }
  // An entry loaded from disk (serve/lifecycle/state_store.h), placed as the oldest: files load newest first.
  void insert_oldest(PromptCacheEntry e) { entries_.push_front(std::move(e)); }
  // Every entry out (an unload that wrote them to disk).
  void clear() { entries_.clear(); }
  // Oldest entries out while over budget, keeping at least one; returns how many went.
  size_t enforce_budget();

  size_t bytes_used() const;
  size_t budget_bytes() const { return opt_.budget_mib * 1024 * 1024; }
  size_t entries() const { return entries_.size(); }
  uint64_t evicted_total() const { return evicted_; }
  const PromptCacheOptions& options() const { return opt_; }
  const std::list<PromptCacheEntry>& contents() const { return entries_; }

 private:
  PromptCacheOptions opt_;
  std::list<PromptCacheEntry> entries_;  // oldest first
  uint64_t evicted_ = 0;
};

}  // namespace tandem::serve
