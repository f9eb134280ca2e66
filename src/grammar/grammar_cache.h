// Compiled grammars by their text, so that an agent sending the same schema every step compiles
// it once and every mask it visited stays cached (spec/constrained.md §6.3). Least recently
// used grammars go first when the byte budget is exceeded; grammars still in use by a request
// stay alive through their shared_ptr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "grammar/compiled_grammar.h"

namespace tandem::grammar {

struct GrammarCacheStats {
  size_t entries = 0, bytes = 0, budget_bytes = 0;
  int64_t hits = 0, misses = 0;
};

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const VocabIndex> vocab, size_t budget_bytes, GrammarLimits limits = {});
  // The compiled grammar for this text (compiled now if not cached). Throws GrammarError.
  std::shared_ptr<CompiledGrammar> get(std::string_view gbnf);
  // Drops the grammar compiled from this text (a run-time limit was reached: its states and masks
  // only grow, so the next request compiles a fresh one). Requests holding it keep their copy.
  void invalidate(std::string_view gbnf);
  GrammarCacheStats stats() const;
  const VocabIndex& vocab() const { return *vocab_; }
  const std::shared_ptr<const VocabIndex>& vocab_ptr() const { return vocab_; }
  const GrammarLimits& limits() const { return limits_; }

 private:
  void enforce_budget_locked();

  std::shared_ptr<const VocabIndex> vocab_;
  size_t budget_;
  GrammarLimits limits_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<CompiledGrammar>>> lru_;  // front: most recent
  std::unordered_map<std::string_view, decltype(lru_)::iterator> index_;      // views into lru_ keys
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace tandem::grammar
