#include "serve/engine/encoder_cache.h"

namespace tandem::serve {

ImageRows EncoderCache::find(uint64_t id) {
  std::lock_guard lk(mu_);
  const auto it = index_.find(id);
  if (it == index_.end()) {
    ++counters_.misses;
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++counters_.hits;
  return it->second->rows;
}

void EncoderCache::insert(uint64_t id, ImageRows rows) {
  if (!rows) return;
  const size_t b = rows->size() * sizeof(float) + sizeof(Entry);
  std::lock_guard lk(mu_);
  if (b > budget_) return;
  if (const auto it = index_.find(id); it != index_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front(Entry{id, std::move(rows), b});
  index_[id] = lru_.begin();
  bytes_ += b;
  while (bytes_ > budget_) {
    const Entry& old = lru_.back();
    bytes_ -= old.bytes;
    index_.erase(old.id);
    lru_.pop_back();
    ++counters_.evictions;
  }
}

EncoderCacheStats EncoderCache::stats() const {
  std::lock_guard lk(mu_);
  EncoderCacheStats s = counters_;
  s.bytes = bytes_;
  s.budget_bytes = budget_;
  s.entries = lru_.size();
  return s;
}

}  // namespace tandem::serve
