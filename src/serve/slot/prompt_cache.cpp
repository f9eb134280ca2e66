#include "serve/slot/prompt_cache.h"

#include <algorithm>

namespace tandem::serve {

size_t PromptCacheEntry::bytes() const {
  size_t b = (state ? state->bytes() : 0) + images.capacity() * sizeof(ImageChunk);
  for (const Checkpoint& c : checkpoints) b += c.bytes;
  return b;
}

PromptCache::PromptCache(PromptCacheOptions opt) : opt_(opt) {}

int64_t restorable_pos(std::span<const int32_t> tokens, std::span<const ImageChunk> images,
                       std::span<const Checkpoint> checkpoints, std::span<const int32_t> prompt,
                       std::span<const ImageChunk> prompt_images) {
  if (tokens.empty() || prompt.empty()) return 0;
  const int64_t L = common_prefix_with_images(tokens, images, prompt, prompt_images);
  const int64_t target = std::min(L, static_cast<int64_t>(prompt.size()) - 1);
  if (target == static_cast<int64_t>(tokens.size())) return target;
  int64_t best = 0;
  for (const Checkpoint& c : checkpoints)
    if (c.pos <= target) best = std::max(best, c.pos);
  return best;
}

bool PromptCache::should_update(std::span<const int32_t> cached, std::span<const ImageChunk> cached_images,
                                std::span<const int32_t> prompt, std::span<const ImageChunk> prompt_images) const {
  // llama.cpp picks the slot by similarity when the common prefix is more than
  // slot_similarity of the prompt, and then goes through the cache only if the slot would
  // keep less than save_below_keep of its tokens; otherwise (or for an empty slot) it picks
  // by LRU and always goes through the cache.
  if (cached.empty() || prompt.empty()) return true;
  const double lcp = static_cast<double>(common_prefix_with_images(cached, cached_images, prompt, prompt_images));
  const double sim = lcp / static_cast<double>(prompt.size());
  if (!(sim > opt_.slot_similarity)) return true;
  return lcp / static_cast<double>(cached.size()) < opt_.save_below_keep;
}

size_t PromptCache::save(std::span<const int32_t> tokens, std::span<const ImageChunk> images,
                         const StateBackend& backend, std::span<const Checkpoint> checkpoints) {
  const auto covered = [](const PromptCacheEntry& e, std::span<const int32_t> t, std::span<const ImageChunk> im) {
    return common_prefix_with_images(e.tokens, e.images, t, im) == static_cast<int64_t>(t.size());
  };
  for (const PromptCacheEntry& e : entries_)
    if (covered(e, tokens, images)) return 0;  // already held
  entries_.remove_if([&](const PromptCacheEntry& e) {
    return common_prefix_with_images(tokens, images, e.tokens, e.images) == static_cast<int64_t>(e.tokens.size());
  });
  PromptCacheEntry& e = entries_.emplace_back();
  e.tokens.assign(tokens.begin(), tokens.end());
  e.images.assign(images.begin(), images.end());
  e.state = backend.save_sequence();
  e.checkpoints.reserve(checkpoints.size());
  for (const Checkpoint& c : checkpoints) e.checkpoints.push_back(c);  // copies the states
  return e.bytes();
}

std::optional<PromptCacheEntry> PromptCache::take_best(std::span<const int32_t> slot_tokens,
                                                       std::span<const ImageChunk> slot_images,
                                                       std::span<const int32_t> prompt,
                                                       std::span<const ImageChunk> prompt_images,
                                                       std::span<const Checkpoint> slot_checkpoints) {
  if (prompt.empty()) return std::nullopt;
  auto best = entries_.end();
  if (opt_.select == CacheSelect::Restorable) {
    // Furthest restore wins; ties stay with the slot (a load copies a whole sequence for nothing)
    // and, among entries, go to the newest.
    int64_t best_pos = restorable_pos(slot_tokens, slot_images, slot_checkpoints, prompt, prompt_images);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const int64_t pos = restorable_pos(it->tokens, it->images, it->checkpoints, prompt, prompt_images);
      if (pos > best_pos || (pos == best_pos && best != entries_.end())) {
        best_pos = pos;
        best = it;
      }
    }
  } else {
    const double n_new = static_cast<double>(prompt.size());
    const int64_t lcp_slot = common_prefix_with_images(slot_tokens, slot_images, prompt, prompt_images);
    // An empty slot loses to any entry.
    double keep_best = slot_tokens.empty() ? -1.0 : static_cast<double>(lcp_slot) / slot_tokens.size();
    double sim_best = static_cast<double>(lcp_slot) / n_new;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->tokens.empty()) continue;
      const double lcp = static_cast<double>(common_prefix_with_images(it->tokens, it->images, prompt, prompt_images));
      const double keep = lcp / static_cast<double>(it->tokens.size());
      const double sim = lcp / n_new;
      if (keep < opt_.min_keep) continue;  // don't trash large prompts
      if (keep_best < keep && sim_best < sim) {
        keep_best = keep;
        sim_best = sim;
        best = it;
      }
    }
  }
  if (best == entries_.end()) return std::nullopt;
  PromptCacheEntry e = std::move(*best);
  entries_.erase(best);
  return e;
}

size_t PromptCache::enforce_budget() {
  size_t n = 0;
  while (entries_.size() > 1 && bytes_used() > budget_bytes()) {
    entries_.pop_front();
    ++n;
  }
  evicted_ += n;
  return n;
}

size_t PromptCache::bytes_used() const {
  size_t b = 0;
  for (const PromptCacheEntry& e : entries_) b += e.bytes();
  return b;
}

}  // namespace tandem::serve
