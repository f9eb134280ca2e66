// A GBNF grammar compiled against one vocabulary, shared by every request that sends the same
// text (grammar/grammar_cache.h). Matching is over bytes: a state is the set of parse stacks
// after some bytes (plus a pending partial UTF-8 character), interned as one 32-bit id, so that
// a snapshot is an int and every per-state result — byte transitions, the token mask, the forced
// run — is computed once, lazily, and cached (XGrammar's "adaptive token mask cache" in spirit;
// spec/constrained.md §6.2–6.3). Thread-safe: requests on several slots may share one.
//
// Semantics are llama.cpp's (src/llama-grammar.cpp): a token is allowed when its bytes extend
// the text so far to a prefix of some sentence; an end-of-generation token only when the text
// is a complete sentence (some stack empty); tokens with no bytes (special, unused) only where
// a token terminal `<[id]>` names them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_limits.h"
#include "grammar/token_mask.h"
#include "grammar/vocab_index.h"

namespace tandem::grammar {

using GrammarState = uint32_t;
inline constexpr GrammarState kDeadState = 0xFFFFFFFFu;  // nothing can follow: the token was illegal

struct GrammarStats {
  size_t states = 0;            // interned states
  size_t masks = 0;             // masks computed (cached)
  size_t forced_runs = 0;       // forced runs computed (cached)
  size_t bytes = 0;             // everything the grammar holds
  int64_t mask_hits = 0, mask_misses = 0;
  double compile_ms = 0;
};

class CompiledGrammar {
 public:
  // Parses and checks `gbnf` (llama.cpp's dialect: grammar/gbnf_parser.h). Throws GrammarError
  // naming the position and what was expected, or when a compile-time limit is exceeded.
  static std::shared_ptr<CompiledGrammar> compile(std::string_view gbnf, std::shared_ptr<const VocabIndex> vocab,
                                                  const GrammarLimits& limits = {});
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const std::string& source() const;
  const VocabIndex& vocab() const;
  GrammarState initial() const;

  // The state after `token` (its bytes, or a token terminal, or an end-of-generation token in
  // an accepting state, which leads to a finished state that allows nothing); kDeadState when
  // the token is not allowed. Throws GrammarLimitError when a limit is reached.
  GrammarState advance(GrammarState s, int32_t token);
  // The state after raw bytes (tests, forced-run tokenization); kDeadState when illegal.
  GrammarState advance_bytes(GrammarState s, std::string_view bytes);
  // allows(s, t) == (advance(s, t) != kDeadState), without interning the result where avoidable.
  bool allows(GrammarState s, int32_t token);
  // Every allowed token (end-of-generation tokens when accepting). Never empty for a live state:
  // a state that can neither continue nor end does not exist (such stacks are pruned).
  std::shared_ptr<const TokenMask> mask(GrammarState s);
  // The text so far is a complete sentence: an end-of-generation token is allowed.
  bool accepting(GrammarState s);
  // Some byte or token terminal may still follow.
  bool can_continue(GrammarState s);
  // Accepting with nothing that may follow: the answer is complete (the engine ends it).
  bool complete(GrammarState s) { return accepting(s) && !can_continue(s); }
  // The tokens the grammar forces from s (the bytes every sentence continues with, tokenized
  // canonically, with the final tokens held back where a longer allowed token could span their
  // end: spec §5, llguidance's rule). Empty when the next byte is a choice. When the state is
  // complete, the forced run is one end-of-generation token. Appended to `out` (cleared first).
  void forced_tokens(GrammarState s, std::vector<int32_t>& out);

  GrammarStats stats() const;
  const GrammarLimits& limits() const;

 private:
  struct Impl;
  explicit CompiledGrammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One request's position in a compiled grammar.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<CompiledGrammar> g) : g_(std::move(g)), s_(g_->initial()) {}
  CompiledGrammar& grammar() const { return *g_; }
  GrammarState state() const { return s_; }
  void set_state(GrammarState s) { s_ = s; }
  void reset() { s_ = g_->initial(); }
  // Advances; false (state unchanged) when the token is not allowed.
  bool accept(int32_t token) {
    const GrammarState n = g_->advance(s_, token);
    if (n == kDeadState) return false;
    s_ = n;
    return true;
  }
  bool allows(int32_t token) const { return g_->allows(s_, token); }
  std::shared_ptr<const TokenMask> mask() const { return g_->mask(s_); }
  bool accepting() const { return g_->accepting(s_); }
  bool complete() const { return g_->complete(s_); }

 private:
  std::shared_ptr<CompiledGrammar> g_;
  GrammarState s_;
};

}  // namespace tandem::grammar
