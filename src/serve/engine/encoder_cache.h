// Encoded images kept by identity (issue 26, beyond the paper): an agent that sends the same
// screen again — the same decoded pixels under the same token budget — gets its embedding rows
// without running the vision encoder. A byte-budgeted LRU; an entry handed out stays alive for
// its request even when the cache evicts it meanwhile (shared ownership).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tandem::serve {

using ImageRows = std::shared_ptr<const std::vector<float>>;

struct EncoderCacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  size_t bytes = 0, budget_bytes = 0, entries = 0;
};

class EncoderCache {
 public:
  explicit EncoderCache(size_t budget_bytes) : budget_(budget_bytes) {}

  // The rows stored under id (now the most recently used), or null (a miss, counted).
  ImageRows find(uint64_t id);
  // Stores rows under id, evicting the least recently used entries beyond the budget; rows larger
  // than the whole budget are not kept.
  void insert(uint64_t id, ImageRows rows);
  EncoderCacheStats stats() const;

 private:
  struct Entry {
    uint64_t id;
    ImageRows rows;
    size_t bytes;
  };
  mutable std::mutex mu_;
  size_t budget_;
  size_t bytes_ = 0;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
  EncoderCacheStats counters_;
};

}  // namespace tandem::serve
