// The matcher: llama.cpp's pushdown semantics (a set of parse stacks of element positions,
// advanced code point by code point, with a pending partial UTF-8 character), made byte-level
// and memoized. Every distinct (stack set, partial character) is interned once as a
// GrammarState; each state keeps, lazily, its 256 byte transitions, so that after the first
// visit a token is checked by following ≤ len(token) table reads, and a mask is a walk of the
// vocabulary trie over those tables.
//
// Where this differs from llama.cpp, on purpose:
//   - bytes are decoded as strict UTF-8 (no overlong forms, no surrogates, nothing above
//     U+10FFFF); llama.cpp's partial-character check lets a few overlong forms through;
//   - a state whose pending partial character can be completed by every surviving stack's class
//     in full forgets the partial value (only the length and the next byte's range matter), so
//     the thousands of CJK byte prefixes of a real vocabulary collapse into a handful of states;
//   - an end-of-generation token named by a token terminal (`<[eos]>`) is allowed there, and
//     `!<[id]>` never matches an end-of-generation token or a row without bytes (llama.cpp masks
//     those before looking at the grammar);
//   - when a token's bytes end inside a character and a token terminal also accepts the token
//     (`!<[x]>` next to a char class), the byte path wins: a state holds one partial character.
#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_program.h"
#include "grammar/token_trie.h"

namespace tandem::grammar {

namespace {

constexpr uint32_t kUnknown = 0xFFFFFFFEu;  // transition not computed yet
constexpr uint32_t kWild = 0xFFFFFFFFu;     // partial character whose value no longer matters
constexpr size_t kMaxForcedBytes = 64;
constexpr int kHoldBackTokens = 4;

using Stack = std::vector<uint32_t>;

// A UTF-8 character still missing `n` continuation bytes; the next one must be in [lo, hi].
struct Partial {
  uint32_t value = 0;  // the bits so far, or kWild
  uint8_t n = 0, lo = 0x80, hi = 0xBF;
  uint32_t packed() const { return uint32_t{n} | uint32_t{lo} << 8 | uint32_t{hi} << 16; }
  static Partial unpack(uint32_t v, uint32_t p) {
    return Partial{v, static_cast<uint8_t>(p & 0xFF), static_cast<uint8_t>((p >> 8) & 0xFF),
                   static_cast<uint8_t>((p >> 16) & 0xFF)};
  }
  // Code points the completions can have (strict UTF-8: the first continuation byte's range
  // already excludes overlong forms and surrogates).
  uint32_t low() const { return value << (6 * n) | uint32_t(lo & 0x3F) << (6 * (n - 1)); }
  uint32_t high() const {
    return value << (6 * n) | uint32_t(hi & 0x3F) << (6 * (n - 1)) | ((uint32_t{1} << (6 * (n - 1))) - 1);
  }
};

struct VecHash {
  size_t operator()(const Stack& v) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull, h ^= h >> 29;
    return static_cast<size_t>(h);
  }
};

struct KeyRef {
  const uint32_t* p;
  size_t n;
  bool operator==(const KeyRef& o) const { return n == o.n && std::equal(p, p + n, o.p); }
};
struct KeyHash {
  size_t operator()(const KeyRef& k) const noexcept {
    uint64_t h = 0xCBF29CE484222325ull ^ k.n;
    for (size_t i = 0; i < k.n; ++i) h = (h ^ k.p[i]) * 0x100000001B3ull, h ^= h >> 31;
    return static_cast<size_t>(h);
  }
};

uint64_t hash_words(const std::vector<uint64_t>& w) {
  uint64_t h = 0x84222325CBF29CE4ull;
  for (uint64_t x : w) h = (h ^ x) * 0x9E3779B97F4A7C15ull, h ^= h >> 32;
  return h;
}

struct State {
  std::vector<uint32_t> key;  // [partial value, partial packed, (len, positions...)...]
  std::unique_ptr<uint32_t[]> trans;  // 256 next states, kUnknown until computed
  bool finished = false, accepting = false, can_continue = false, has_token_terms = false;
  std::vector<int32_t> token_ids;  // `<[id]>` at a stack top
  std::vector<int32_t> not_ids;    // `!<[id]>` at a stack top (distinct)
  std::shared_ptr<const TokenMask> mask;
  bool forced_done = false;
  std::vector<int32_t> forced;
  std::unique_ptr<std::unordered_map<int32_t, uint32_t>> token_next;  // tokens through terminals
  Partial partial() const { return Partial::unpack(key[0], key[1]); }
};

}  // namespace

struct CompiledGrammar::Impl {
  std::string source;
  std::shared_ptr<const VocabIndex> vocab;
  GrammarLimits limits;
  Program prog;
  GrammarState initial = kDeadState;
  GrammarState finished = kDeadState;
  double compile_ms = 0;

  mutable std::mutex mu;
  std::deque<State> states;
  std::unordered_map<KeyRef, uint32_t, KeyHash> index;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const TokenMask>>> mask_dedup;
  size_t bytes = 0;
  size_t n_masks = 0, n_forced = 0;
  int64_t mask_hits = 0, mask_misses = 0;
  std::vector<uint32_t> scratch_key;

  // ---- memory and limits ------------------------------------------------------------------

  void charge(size_t b) {
    // Checked before counting: a failed attempt does not grow the count.
    if (bytes + b > limits.max_bytes)
      throw GrammarLimitError("grammar memory limit reached (max_bytes = " + std::to_string(limits.max_bytes) +
                              " bytes of states, transitions, masks and forced runs)");
    bytes += b;
  }

  // ---- stack sets -----------------------------------------------------------------------

  // llama.cpp's advance_stack over a work list: replaces rule references at stack tops by each
  // alternative (tail positions that end a sequence are not pushed, so right recursion does not
  // grow the stack) until every stack's top is a terminal, or the stack is empty (accepting).
  // Stacks seen once are not expanded again, so ambiguous grammars stay polynomial.
  void expand(std::vector<Stack>& work, std::vector<Stack>& out) {
    std::unordered_set<Stack, VecHash> seen;
    size_t steps = 0;
    const size_t max_steps = limits.max_stacks_per_state * 64 + 4096;
    while (!work.empty()) {
      Stack st = std::move(work.back());
      work.pop_back();
      if (++steps > max_steps)
        throw GrammarLimitError("grammar stack limit reached: expanding one state took over " + std::to_string(max_steps) +
                                " steps (max_stacks_per_state = " + std::to_string(limits.max_stacks_per_state) + ")");
      if (!seen.insert(st).second) continue;
      if (st.empty()) {
        out.push_back(std::move(st));
        continue;
      }
      const uint32_t pos = st.back();
      const ElemType t = prog.type[pos];
      if (t == ElemType::RuleRef) {
        const uint32_t rule = prog.value[pos];
        const uint32_t cont = prog.next[pos];
        for (uint32_t a = prog.alt_begin[rule]; a < prog.alt_begin[rule + 1]; ++a) {
          Stack ns(st.begin(), st.end() - 1);
          if (!prog.end_of_sequence(cont)) ns.push_back(cont);
          const uint32_t first = prog.alts[a];
          if (!prog.end_of_sequence(first)) ns.push_back(first);
          if (ns.size() > limits.max_stack_depth)
            throw GrammarLimitError("grammar stack depth limit reached (max_stack_depth = " +
                                    std::to_string(limits.max_stack_depth) + ")");
          work.push_back(std::move(ns));
        }
      } else if (prog.is_class(pos)) {
        if (prog.classes[static_cast<size_t>(prog.cls[pos])].satisfiable) out.push_back(std::move(st));
      } else {
        out.push_back(std::move(st));  // token terminal
      }
      if (out.size() > limits.max_stacks_per_state)
        throw GrammarLimitError("grammar stack limit reached: a state has over " +
                                std::to_string(limits.max_stacks_per_state) + " parse stacks (max_stacks_per_state)");
    }
  }

  // Pops the matched terminal at the top and pushes what follows it in its sequence.
  void step_past_top(const Stack& st, std::vector<Stack>& work) const {
    const uint32_t pos = st.back();
    Stack ns(st.begin(), st.end() - 1);
    const uint32_t cont = prog.next[pos];
    if (!prog.end_of_sequence(cont)) ns.push_back(cont);
    work.push_back(std::move(ns));
  }

  std::vector<Stack> decode_stacks(const State& s) const {
    std::vector<Stack> out;
    size_t i = 2;
    while (i < s.key.size()) {
      const uint32_t len = s.key[i++];
      out.emplace_back(s.key.begin() + static_cast<ptrdiff_t>(i), s.key.begin() + static_cast<ptrdiff_t>(i + len));
      i += len;
    }
    return out;
  }

  // Interns (stacks, partial). A set that can neither continue nor end is kDeadState.
  GrammarState intern(std::vector<Stack>& stacks, Partial p) {
    if (stacks.empty()) return kDeadState;
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    auto& k = scratch_key;
    k.clear();
    k.push_back(p.n ? p.value : 0);
    k.push_back(p.n ? p.packed() : 0);
    for (const Stack& s : stacks) {
      k.push_back(static_cast<uint32_t>(s.size()));
      k.insert(k.end(), s.begin(), s.end());
    }
    if (const auto it = index.find(KeyRef{k.data(), k.size()}); it != index.end()) return it->second;
    if (states.size() >= limits.max_states)
      throw GrammarLimitError("grammar state limit reached (max_states = " + std::to_string(limits.max_states) + ")");
    charge(sizeof(State) + k.size() * 4 + 64);
    State& s = states.emplace_back();
    tables.push_back(nullptr);
    s.key = k;
    for (const Stack& st : stacks) {
      if (st.empty()) {
        s.accepting = p.n == 0;
        continue;
      }
      s.can_continue = true;
      const uint32_t top = st.back();
      if (prog.type[top] == ElemType::Token) s.token_ids.push_back(static_cast<int32_t>(prog.value[top]));
      if (prog.type[top] == ElemType::TokenNot) s.not_ids.push_back(static_cast<int32_t>(prog.value[top]));
    }
    for (auto* v : {&s.token_ids, &s.not_ids}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    s.has_token_terms = !s.token_ids.empty() || !s.not_ids.empty();
    const uint32_t id = static_cast<uint32_t>(states.size() - 1);
    index.emplace(KeyRef{s.key.data(), s.key.size()}, id);
    return id;
  }

  // ---- byte transitions ---------------------------------------------------------------------

  // Stacks whose class top can match some completion of p; wild when every one matches all.
  void filter_partial(const std::vector<Stack>& stacks, Partial& p, std::vector<Stack>& out) const {
    const uint32_t lo = p.value == kWild ? 0 : p.low(), hi = p.value == kWild ? 0 : p.high();
    bool all = true;
    for (const Stack& st : stacks) {
      if (st.empty() || !prog.is_class(st.back())) continue;
      if (p.value == kWild) {
        out.push_back(st);
        continue;
      }
      const CodePointSet& c = prog.classes[static_cast<size_t>(prog.cls[st.back()])];
      if (!c.intersects(lo, hi)) continue;
      all = all && c.contains_all(lo, hi);
      out.push_back(st);
    }
    if (all) p.value = kWild;
  }

  GrammarState advance_cp(const std::vector<Stack>& stacks, uint32_t cp, bool any) {
    std::vector<Stack> work, out;
    for (const Stack& st : stacks) {
      if (st.empty() || !prog.is_class(st.back())) continue;
      if (any || prog.classes[static_cast<size_t>(prog.cls[st.back()])].contains(cp)) step_past_top(st, work);
    }
    if (work.empty()) return kDeadState;
    expand(work, out);
    return intern(out, Partial{});
  }

  // The character a lead byte starts (strict UTF-8); false for a stray continuation byte,
  // C0/C1 and F5..FF.
  static bool lead_partial(uint8_t b, Partial& q) {
    if (b >= 0xC2 && b <= 0xDF) q = {b & 0x1Fu, 1, 0x80, 0xBF};
    else if (b == 0xE0) q = {0, 2, 0xA0, 0xBF};
    else if (b == 0xED) q = {0xD, 2, 0x80, 0x9F};
    else if (b >= 0xE1 && b <= 0xEF) q = {b & 0x0Fu, 2, 0x80, 0xBF};
    else if (b == 0xF0) q = {0, 3, 0x90, 0xBF};
    else if (b >= 0xF1 && b <= 0xF3) q = {b & 0x07u, 3, 0x80, 0xBF};
    else if (b == 0xF4) q = {4, 3, 0x80, 0x8F};
    else return false;
    return true;
  }

  // All 256 transitions of a state at once, the stacks decoded once. Bytes that complete a
  // character matched by the same subset of stacks lead to the same state, so each subset is
  // advanced once (a dense class like [^"\\] costs one advance, not ~100). States with more
  // than 64 stacks are left to compute_transition, byte by byte.
  void fill_table(GrammarState sid, uint32_t* t) {
    const State& s = states[sid];
    if (s.finished) {
      std::fill(t, t + 256, kDeadState);
      return;
    }
    const Partial p = s.partial();
    const std::vector<Stack> stacks = decode_stacks(s);
    if (stacks.size() > 64) return;
    std::vector<const CodePointSet*> cls(stacks.size(), nullptr);
    for (size_t i = 0; i < stacks.size(); ++i)
      if (!stacks[i].empty() && prog.is_class(stacks[i].back()))
        cls[i] = &prog.classes[static_cast<size_t>(prog.cls[stacks[i].back()])];
    std::vector<std::pair<uint64_t, GrammarState>> by_subset;
    auto complete_cp = [&](uint32_t cp, bool any) -> GrammarState {
      uint64_t subset = 0;
      for (size_t i = 0; i < stacks.size(); ++i)
        if (cls[i] && (any || cls[i]->contains(cp))) subset |= uint64_t{1} << i;
      if (!subset) return kDeadState;
      for (const auto& [k, v] : by_subset)
        if (k == subset) return v;
      std::vector<Stack> work, out;
      for (size_t i = 0; i < stacks.size(); ++i)
        if ((subset >> i) & 1u) step_past_top(stacks[i], work);
      expand(work, out);
      const GrammarState r = intern(out, Partial{});
      by_subset.emplace_back(subset, r);
      return r;
    };
    auto partial_state = [&](Partial q) -> GrammarState {
      std::vector<Stack> kept;
      filter_partial(stacks, q, kept);
      return intern(kept, q);
    };
    if (p.n > 0) {
      for (int b = 0; b < 256; ++b) {
        if (b < p.lo || b > p.hi) {
          t[b] = kDeadState;
          continue;
        }
        const Partial q{p.value == kWild ? kWild : (p.value << 6) | (static_cast<uint32_t>(b) & 0x3Fu),
                        static_cast<uint8_t>(p.n - 1), 0x80, 0xBF};
        t[b] = q.n == 0 ? complete_cp(q.value, q.value == kWild) : partial_state(q);
      }
      return;
    }
    for (int b = 0; b < 0x80; ++b) t[b] = complete_cp(static_cast<uint32_t>(b), false);
    for (int b = 0x80; b < 256; ++b) {
      Partial q;
      t[b] = lead_partial(static_cast<uint8_t>(b), q) ? partial_state(q) : kDeadState;
    }
  }

  GrammarState compute_transition(GrammarState sid, uint8_t b) {
    const State& s = states[sid];
    if (s.finished) return kDeadState;
    const Partial p = s.partial();
    const std::vector<Stack> stacks = decode_stacks(s);
    if (p.n > 0) {
      if (b < p.lo || b > p.hi) return kDeadState;
      Partial q{p.value == kWild ? kWild : (p.value << 6) | (b & 0x3Fu), static_cast<uint8_t>(p.n - 1), 0x80, 0xBF};
      if (q.n == 0) return advance_cp(stacks, q.value, q.value == kWild);
      std::vector<Stack> kept;
      filter_partial(stacks, q, kept);
      return intern(kept, q);
    }
    if (b < 0x80) return advance_cp(stacks, b, false);
    Partial q;
    if (!lead_partial(b, q)) return kDeadState;
    std::vector<Stack> kept;
    filter_partial(stacks, q, kept);
    return intern(kept, q);
  }

  // The state's transition table, filled on first use.
  uint32_t* table(GrammarState s) {
    if (tables[s]) return tables[s];
    State& st = states[s];
    charge(256 * sizeof(uint32_t));
    st.trans = std::make_unique<uint32_t[]>(256);
    uint32_t* t = st.trans.get();
    std::fill(t, t + 256, kUnknown);
    tables[s] = t;
    fill_table(s, t);  // may intern states (tables grows; `t` stays valid)
    return t;
  }
  std::vector<uint32_t*> tables;  // by state (same size as states): its table, or null; flat, no deque lookup

  GrammarState next(GrammarState s, uint8_t b) {
    uint32_t* t = table(s);
    uint32_t r = t[b];
    if (r == kUnknown) {
      r = compute_transition(s, b);
      t[b] = r;  // `t` stays valid: states live in a deque and tables are never freed
    }
    return r;
  }

  GrammarState walk_bytes(GrammarState s, std::string_view bytes) {
    for (const char c : bytes) {
      s = next(s, static_cast<uint8_t>(c));
      if (s == kDeadState) return kDeadState;
    }
    return s;
  }

  // ---- tokens -------------------------------------------------------------------------------

  // The values v of the state's !<[v]> stack tops whose continuation can still be matched
  // (sorted, distinct). A token t != v goes on through such a stack.
  std::vector<int32_t> alive_not_ids(GrammarState s) {
    std::vector<int32_t> alive;
    std::vector<Stack> work, out;
    for (const Stack& stk : decode_stacks(states[s])) {
      if (stk.empty() || prog.type[stk.back()] != ElemType::TokenNot) continue;
      const int32_t v = static_cast<int32_t>(prog.value[stk.back()]);
      if (std::find(alive.begin(), alive.end(), v) != alive.end()) continue;
      work.clear();
      out.clear();
      step_past_top(stk, work);
      expand(work, out);
      if (!out.empty()) alive.push_back(v);
    }
    std::sort(alive.begin(), alive.end());
    return alive;
  }

  bool not_matches(int32_t not_id, int32_t token) const {
    return token != not_id && !vocab->is_eog(token) && !vocab->token_bytes(token).empty();
  }

  bool valid_state(GrammarState s) const { return s < states.size(); }

  GrammarState advance_locked(GrammarState s, int32_t token) {
    if (!valid_state(s) || token < 0 || token >= vocab->n_vocab()) return kDeadState;
    State& st = states[s];
    if (st.finished) return kDeadState;
    if (vocab->is_eog(token)) {
      const bool named = std::binary_search(st.token_ids.begin(), st.token_ids.end(), token);
      return st.accepting || named ? finished : kDeadState;
    }
    if (!st.has_token_terms) return vocab->is_special(token) ? kDeadState : walk_bytes(s, vocab->token_bytes(token));
    if (st.token_next) {
      const auto it = st.token_next->find(token);
      if (it != st.token_next->end()) return it->second;
    }
    const GrammarState r = advance_with_terms(s, token);
    State& st2 = states[s];
    if (!st2.token_next) st2.token_next = std::make_unique<std::unordered_map<int32_t, uint32_t>>();
    charge(32);
    st2.token_next->emplace(token, r);
    return r;
  }

  // A state with token terminals at some stack tops: the byte path and the token path, joined.
  GrammarState advance_with_terms(GrammarState s, int32_t token) {
    const GrammarState by_bytes = vocab->is_special(token) ? kDeadState : walk_bytes(s, vocab->token_bytes(token));
    std::vector<Stack> work, out;
    for (const Stack& stk : decode_stacks(states[s])) {
      if (stk.empty()) continue;
      const uint32_t top = stk.back();
      const ElemType t = prog.type[top];
      const int32_t v = static_cast<int32_t>(prog.value[top]);
      if ((t == ElemType::Token && v == token) || (t == ElemType::TokenNot && not_matches(v, token))) step_past_top(stk, work);
    }
    if (work.empty()) return by_bytes;
    if (by_bytes != kDeadState && states[by_bytes].partial().n > 0) return by_bytes;  // see the file comment
    expand(work, out);
    if (by_bytes != kDeadState)
      for (Stack& stk : decode_stacks(states[by_bytes])) out.push_back(std::move(stk));
    return intern(out, Partial{});
  }

  bool allows_locked(GrammarState s, int32_t token) {
    if (!valid_state(s) || token < 0 || token >= vocab->n_vocab()) return false;
    const State& st = states[s];
    if (st.finished) return false;
    if (vocab->is_eog(token)) return st.accepting || std::binary_search(st.token_ids.begin(), st.token_ids.end(), token);
    if (!st.has_token_terms) {
      if (vocab->is_special(token)) return false;
      return walk_bytes(s, vocab->token_bytes(token)) != kDeadState;
    }
    return advance_locked(s, token) != kDeadState;
  }

  // ---- masks --------------------------------------------------------------------------------

  // One pass over the DFS-ordered trie: a node is visited only while its parent's state is
  // alive, so a dead byte skips the whole subtree. The table of the state at each depth is kept
  // in a small array (tables are never freed or moved, so the pointers stay valid while the
  // walk interns new states). kFindAny: stop at the first allowed token (hold-back checks).
  template <bool kFindAny>
  bool trie_walk(GrammarState s, uint32_t begin, uint32_t end, uint16_t base_depth, uint64_t* bits) {
    const TokenTrie& trie = vocab->trie();
    const TokenTrie::Node* nodes = trie.nodes().data();
    const size_t max_d = trie.max_depth() + 2u;
    if (walk_tab_.size() < max_d) walk_tab_.resize(max_d);
    if (walk_state_.size() < max_d) walk_state_.resize(max_d);
    uint32_t** tab = walk_tab_.data();
    uint32_t* st = walk_state_.data();
    tab[0] = table(s);
    st[0] = s;
    // No branch on the trie's shape (descend / sibling / climb is unpredictable): every node
    // reads its parent's table from tab[depth - 1] and writes its own state's table to
    // tab[depth], which only its children read. In dense states most bytes loop back to the
    // same state; the (well predicted) test then skips the dependent load of the child's table.
    uint32_t i = begin;
    while (i < end) {
      const TokenTrie::Node nd = nodes[i];
      const uint32_t d = static_cast<uint32_t>(nd.depth - base_depth);  // 1-based, relative
      uint32_t* t = tab[d - 1];
      if (!t) [[unlikely]]
        t = tab[d - 1] = table(st[d - 1]);  // first child of a state without a table yet
      uint32_t r = t[nd.byte];
      if (r >= kUnknown) [[unlikely]] {
        if (r == kUnknown) {
          r = compute_transition(st[d - 1], nd.byte);
          t[nd.byte] = r;
        }
        if (r == kDeadState) {
          i = nd.skip;
          continue;
        }
      }
      if constexpr (kFindAny) {
        if (nd.token != TokenTrie::kNoToken) return true;
      } else {
        // Branch-free: about half the nodes end a token, unpredictably.
        const uint32_t tk = nd.token;
        const bool has = tk != TokenTrie::kNoToken;
        bits[has ? tk >> 6 : 0] |= uint64_t{has} << (tk & 63);
        if (nd.more) [[unlikely]]
          for (const int32_t dup : trie.duplicates(i)) bits[static_cast<size_t>(dup) >> 6] |= uint64_t{1} << (dup & 63);
      }
      if (r == st[d - 1]) {
        tab[d] = t;
      } else {
        tab[d] = tables[r];
      }
      st[d] = r;
      ++i;
    }
    return false;
  }
  std::vector<uint32_t*> walk_tab_;  // scratch for trie_walk, by depth
  std::vector<uint32_t> walk_state_;

  std::shared_ptr<const TokenMask> compute_mask(GrammarState s) {
    auto m = std::make_shared<TokenMask>();
    const int32_t n_vocab = vocab->n_vocab();
    m->bits.assign((static_cast<size_t>(n_vocab) + 63) / 64, 0);
    const State& st0 = states[s];
    if (!st0.finished) {
      trie_walk<false>(s, 0, static_cast<uint32_t>(vocab->trie().size()), 0, m->bits.data());
      const State& st = states[s];
      auto set = [&](int32_t id) { m->bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); };
      // A token terminal is allowed only where what follows it can still be matched: an element
      // after it may be unsatisfiable (a literal whose bytes are no UTF-8 any token spells), and
      // then the parse ends there — the mask must not offer a token that advance() rejects.
      const std::vector<int32_t> ids = st.token_ids;
      for (const int32_t id : ids)
        if (id >= 0 && id < n_vocab && advance_locked(s, id) != kDeadState) set(id);
      const std::vector<int32_t> nots = alive_not_ids(s);
      if (!nots.empty()) {
        const bool all = nots.size() > 1;
        for (int32_t id = 0; id < n_vocab; ++id)
          if ((all || id != nots[0]) && !vocab->is_eog(id) && !vocab->token_bytes(id).empty()) set(id);
      }
      if (st.accepting)
        for (const int32_t id : vocab->tokenizer().vocab().eog_ids()) set(id);
    }
    int64_t n = 0;
    for (const uint64_t w : m->bits) n += std::popcount(w);
    m->n_allowed = n;
    // Identical masks (states that differ only in parse history) share one bitset.
    const uint64_t h = hash_words(m->bits);
    auto& bucket = mask_dedup[h];
    for (const auto& other : bucket)
      if (other->bits == m->bits) return other;
    charge(m->bits.capacity() * 8 + sizeof(TokenMask) + 64);
    bucket.push_back(m);
    return m;
  }

  // ---- forced runs --------------------------------------------------------------------------

  // The one byte every continuation of s starts with, or -1 when there is a choice (several
  // bytes, the end of the sentence, or a token terminal).
  int forced_byte(GrammarState s) {
    const State& st = states[s];
    if (st.finished || st.accepting || st.has_token_terms) return -1;
    int only = -1;
    for (int b = 0; b < 256; ++b) {
      if (next(s, static_cast<uint8_t>(b)) == kDeadState) continue;
      if (only >= 0) return -1;
      only = b;
    }
    return only;
  }

  int32_t eog_token() const {
    const auto& v = vocab->tokenizer().vocab();
    if (v.eos() && v.is_eog(*v.eos())) return *v.eos();
    return v.eog_ids().empty() ? -1 : v.eog_ids().front();
  }

  // Forced run from s (spec §5, llguidance's rule):
  //   1. F = the bytes every sentence continues with (single-successor transitions), at most
  //      kMaxForcedBytes, cut back to the last character boundary;
  //   2. T = tokenizer.encode(F) (parse_special = false); if T does not spell F with normal
  //      tokens the grammar accepts from s, there is no forced run;
  //   3. hold back: for the last kHoldBackTokens tokens, from the end, drop token j while some
  //      vocabulary token allowed at j's start is longer than F[start_j..] and begins with it —
  //      then the model may rightly pick that longer token, and forcing T[j] would be
  //      non-canonical. Stop at the first token that no longer token can span.
  //   A complete state (accepting, nothing may follow) forces one end-of-generation token.
  std::vector<int32_t> compute_forced(GrammarState s) {
    std::vector<int32_t> out;
    const State& st = states[s];
    if (st.finished) return out;
    if (st.accepting && !st.can_continue) {
      if (const int32_t e = eog_token(); e >= 0) out.push_back(e);
      return out;
    }
    std::string f;
    size_t boundary = 0;
    GrammarState cur = s, at_boundary = s;
    while (f.size() < kMaxForcedBytes) {
      const int b = forced_byte(cur);
      if (b < 0) break;
      f.push_back(static_cast<char>(b));
      cur = next(cur, static_cast<uint8_t>(b));
      if (states[cur].partial().n == 0) {
        boundary = f.size();
        at_boundary = cur;
      }
    }
    f.resize(boundary);
    if (f.empty()) return out;
    const GrammarState end_state = at_boundary;
    std::vector<int32_t> toks = vocab->tokenizer().encode(f, text::EncodeOptions{.parse_special = false});
    std::vector<size_t> start;
    size_t off = 0;
    GrammarState g = s;
    for (const int32_t t : toks) {
      if (vocab->is_special(t) || vocab->is_eog(t)) return out;
      const std::string_view tb = vocab->token_bytes(t);
      if (f.compare(off, tb.size(), tb) != 0) return out;  // the tokenizer changed the text (NFC)
      start.push_back(off);
      off += tb.size();
      g = advance_locked(g, t);
      if (g == kDeadState) return out;
    }
    if (off != f.size() || g != end_state) return out;
    size_t keep = toks.size();
    const TokenTrie& trie = vocab->trie();
    for (size_t j = toks.size(); j-- > 0 && toks.size() - j <= static_cast<size_t>(kHoldBackTokens);) {
      const std::string_view rem = std::string_view(f).substr(start[j]);
      const uint32_t node = trie.find(rem);
      bool spans = false;
      if (node != TokenTrie::kNoToken) {
        const auto& nd = trie.nodes()[node];
        // Tokens strictly below `node` extend rem; from end_state (= the state at j's start
        // after rem) are any of their extra bytes allowed?
        spans = trie_walk<true>(end_state, node + 1, nd.skip, nd.depth, nullptr);
      }
      if (!spans) break;
      keep = j;
    }
    toks.resize(keep);
    return toks;
  }
};

// ---- public API ---------------------------------------------------------------------------------

CompiledGrammar::CompiledGrammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledGrammar::~CompiledGrammar() = default;

std::shared_ptr<CompiledGrammar> CompiledGrammar::compile(std::string_view gbnf, std::shared_ptr<const VocabIndex> vocab,
                                                          const GrammarLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!vocab) throw GrammarError("grammar: no vocabulary");
  auto impl = std::make_unique<Impl>();
  impl->source = std::string(gbnf);
  impl->vocab = std::move(vocab);
  impl->limits = limits;
  const ParsedGrammar parsed = parse_gbnf(gbnf, limits, impl->vocab.get());
  impl->prog = Program::build(parsed);
  try {
    impl->charge(impl->prog.bytes() + impl->source.size());
  } catch (const GrammarLimitError& e) {
    throw GrammarError(e.what());  // at compile time a limit is the request's fault: a 400
  }
  // The finished state (after an end-of-generation token): allows nothing.
  {
    State& f = impl->states.emplace_back();
    impl->tables.push_back(nullptr);
    f.key = {kWild, kWild};
    f.finished = f.accepting = true;
    impl->finished = 0;
  }
  try {
    std::vector<Stack> work, out;
    const Program& p = impl->prog;
    for (uint32_t a = p.alt_begin[p.root]; a < p.alt_begin[p.root + 1]; ++a) {
      Stack st;
      if (!p.end_of_sequence(p.alts[a])) st.push_back(p.alts[a]);
      work.push_back(std::move(st));
    }
    impl->expand(work, out);
    impl->initial = impl->intern(out, Partial{});
  } catch (const GrammarLimitError& e) {
    throw GrammarError(std::string("grammar exceeds a limit at its start: ") + e.what());
  }
  if (impl->initial == kDeadState) throw GrammarError("grammar accepts nothing: 'root' has no satisfiable alternative");
  impl->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<CompiledGrammar>(new CompiledGrammar(std::move(impl)));
}

const std::string& CompiledGrammar::source() const { return impl_->source; }
const VocabIndex& CompiledGrammar::vocab() const { return *impl_->vocab; }
GrammarState CompiledGrammar::initial() const { return impl_->initial; }
const GrammarLimits& CompiledGrammar::limits() const { return impl_->limits; }

GrammarState CompiledGrammar::advance(GrammarState s, int32_t token) {
  std::lock_guard lk(impl_->mu);
  return impl_->advance_locked(s, token);
}

GrammarState CompiledGrammar::advance_bytes(GrammarState s, std::string_view bytes) {
  std::lock_guard lk(impl_->mu);
  if (!impl_->valid_state(s) || impl_->states[s].finished) return bytes.empty() && impl_->valid_state(s) ? s : kDeadState;
  return impl_->walk_bytes(s, bytes);
}

bool CompiledGrammar::allows(GrammarState s, int32_t token) {
  std::lock_guard lk(impl_->mu);
  return impl_->allows_locked(s, token);
}

std::shared_ptr<const TokenMask> CompiledGrammar::mask(GrammarState s) {
  std::lock_guard lk(impl_->mu);
  if (!impl_->valid_state(s)) {
    auto m = std::make_shared<TokenMask>();
    m->bits.assign((static_cast<size_t>(impl_->vocab->n_vocab()) + 63) / 64, 0);
    return m;
  }
  State& st = impl_->states[s];
  if (st.mask) {
    ++impl_->mask_hits;
    return st.mask;
  }
  ++impl_->mask_misses;
  auto m = impl_->compute_mask(s);
  impl_->states[s].mask = m;
  ++impl_->n_masks;
  return m;
}

bool CompiledGrammar::accepting(GrammarState s) {
  std::lock_guard lk(impl_->mu);
  return impl_->valid_state(s) && impl_->states[s].accepting;
}

bool CompiledGrammar::can_continue(GrammarState s) {
  std::lock_guard lk(impl_->mu);
  return impl_->valid_state(s) && impl_->states[s].can_continue;
}

void CompiledGrammar::forced_tokens(GrammarState s, std::vector<int32_t>& out) {
  out.clear();
  std::lock_guard lk(impl_->mu);
  if (!impl_->valid_state(s)) return;
  if (!impl_->states[s].forced_done) {
    std::vector<int32_t> f = impl_->compute_forced(s);
    impl_->charge(f.size() * 4 + 16);
    State& st = impl_->states[s];
    st.forced = std::move(f);
    st.forced_done = true;
    ++impl_->n_forced;
  }
  const State& st = impl_->states[s];
  out.assign(st.forced.begin(), st.forced.end());
}

GrammarStats CompiledGrammar::stats() const {
  std::lock_guard lk(impl_->mu);
  GrammarStats g;
  g.states = impl_->states.size();
  g.masks = impl_->n_masks;
  g.forced_runs = impl_->n_forced;
  g.bytes = impl_->bytes;
  g.mask_hits = impl_->mask_hits;
  g.mask_misses = impl_->mask_misses;
  g.compile_ms = impl_->compile_ms;
  return g;
}

}  // namespace tandem::grammar
