#include "grammar/grammar_cache.h"

namespace tandem::grammar {

GrammarCache::GrammarCache(std::shared_ptr<const VocabIndex> vocab, size_t budget_bytes, GrammarLimits limits)
    : vocab_(std::move(vocab)), budget_(budget_bytes), limits_(limits) {}

std::shared_ptr<CompiledGrammar> GrammarCache::get(std::string_view gbnf) {
  {
    std::lock_guard lk(mu_);
    if (const auto it = index_.find(gbnf); it != index_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);  // iterators (and the key's storage) stay valid
      return it->second->second;
    }
    ++misses_;
  }
  // Compiled outside the lock: a slow or failing grammar does not stall other requests. Two
  // requests racing on the same new text both compile; the first one inserted wins.
  auto g = CompiledGrammar::compile(gbnf, vocab_, limits_);
  std::lock_guard lk(mu_);
  if (const auto it = index_.find(gbnf); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(std::string(gbnf), g);
  index_.emplace(std::string_view(lru_.front().first), lru_.begin());
  enforce_budget_locked();
  return g;
}

// A grammar's size grows as its masks are filled in, so sizes are read at each check. The most
// recent entry is never evicted (the caller is about to use it).
void GrammarCache::enforce_budget_locked() {
  size_t total = 0;
  for (const auto& [text, g] : lru_) total += text.size() + g->stats().bytes;
  while (total > budget_ && lru_.size() > 1) {
    auto& [text, g] = lru_.back();
    total -= text.size() + g->stats().bytes;
    index_.erase(std::string_view(text));
    lru_.pop_back();
  }
}

void GrammarCache::invalidate(std::string_view gbnf) {
  std::lock_guard lk(mu_);
  const auto it = index_.find(gbnf);
  if (it == index_.end()) return;
  const auto node = it->second;
  index_.erase(it);
  lru_.erase(node);
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard lk(mu_);
  GrammarCacheStats s;
  s.entries = lru_.size();
  for (const auto& [text, g] : lru_) s.bytes += text.size() + g->stats().bytes;
  s.budget_bytes = budget_;
  s.hits = hits_;
  s.misses = misses_;
  return s;
}

}  // namespace tandem::grammar
