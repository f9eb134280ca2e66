#include "grammar/compiled_grammar.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "grammar/grammar_test_vocab.h"

namespace tandem::grammar {
namespace {

using testing::vocab;
const text::Tokenizer& tok() { return *vocab().tok; }
int32_t id_of(std::string_view bytes) {
  const auto& v = tok().vocab();
  for (int32_t i = 0; i < v.size(); ++i)
    if (v.token_type(i) == text::TokenType::Normal && v.token_bytes(i) == bytes) return i;
  ADD_FAILURE() << "no token for '" << bytes << "'";
  return -1;
}

std::shared_ptr<CompiledGrammar> compile(const std::string& g, const GrammarLimits& lim = {}) {
  return CompiledGrammar::compile(g, vocab().index, lim);
}

bool accepts(CompiledGrammar& g, std::string_view s) {
  const GrammarState st = g.advance_bytes(g.initial(), s);
  return st != kDeadState && g.accepting(st);
}
bool prefix_ok(CompiledGrammar& g, std::string_view s) { return g.advance_bytes(g.initial(), s) != kDeadState; }

const char* kAction =
    R"G(root ::= "{\"action\":\"" ( "tap\",\"index\":" [0-9]+ | "type\",\"text\":\"" [^"\\]* "\"" | "back\"" | "home\"" ) "}")G";

TEST(GrammarMatcher, LiteralsAlternativesAndClasses) {
  auto g = compile("root ::= \"ab\" (\"c\" | [x-z]+) [^0-9]");
  EXPECT_TRUE(accepts(*g, "abca"));
  EXPECT_TRUE(accepts(*g, "abxyzq"));
  EXPECT_FALSE(accepts(*g, "abc1"));
  EXPECT_FALSE(accepts(*g, "abc"));
  EXPECT_TRUE(prefix_ok(*g, "abc"));
  EXPECT_FALSE(prefix_ok(*g, "abd"));
  EXPECT_FALSE(accepts(*g, ""));
}

TEST(GrammarMatcher, ActionGrammar) {
  auto g = compile(kAction);
  EXPECT_TRUE(accepts(*g, R"G({"action":"tap","index":12})G"));
  EXPECT_TRUE(accepts(*g, R"G({"action":"type","text":"hello wörld 中文"})G"));
  EXPECT_TRUE(accepts(*g, R"G({"action":"back"})G"));
  EXPECT_FALSE(accepts(*g, R"G({"action":"tap","index":})G"));
  EXPECT_FALSE(accepts(*g, R"G({"action":"type","text":"a"b"})G"));
  EXPECT_FALSE(prefix_ok(*g, R"G({"action":"jump)G"));
  EXPECT_FALSE(accepts(*g, R"G({"action":"back"} )G"));
}

TEST(GrammarMatcher, RepetitionBounds) {
  auto g = compile("root ::= \"a\"{2,4} \"b\"{3} \"c\"{1,} \"d\"{0,2}");
  EXPECT_FALSE(accepts(*g, "abbbc"));
  EXPECT_TRUE(accepts(*g, "aabbbc"));
  EXPECT_TRUE(accepts(*g, "aaaabbbcccdd"));
  EXPECT_FALSE(accepts(*g, "aaaaabbbc"));
  EXPECT_FALSE(accepts(*g, "aabbc"));
  EXPECT_FALSE(accepts(*g, "aabbbcddd"));
  auto q = compile("root ::= \"x\"? \"y\"* \"z\"+");
  EXPECT_TRUE(accepts(*q, "z"));
  EXPECT_TRUE(accepts(*q, "xyyyzz"));
  EXPECT_FALSE(accepts(*q, "xxz"));
  EXPECT_FALSE(accepts(*q, "xy"));
}

TEST(GrammarMatcher, UnicodeClassesAndDot) {
  auto jp = compile("root ::= [ぁ-ゟ]+ [一-鿿]");
  EXPECT_TRUE(accepts(*jp, "あい中"));
  EXPECT_FALSE(accepts(*jp, "あいa"));
  EXPECT_FALSE(accepts(*jp, "中"));
  auto any = compile("root ::= \"<\" . \">\"");
  EXPECT_TRUE(accepts(*any, "<a>"));
  EXPECT_TRUE(accepts(*any, "<\xC3\xA9>"));
  EXPECT_TRUE(accepts(*any, "<\xF0\x9F\x98\x80>"));
  EXPECT_FALSE(accepts(*any, "<ab>"));
  EXPECT_FALSE(accepts(*any, "<\xC3>"));     // broken character
  EXPECT_FALSE(accepts(*any, "<\xC0\x80>"));  // overlong
  EXPECT_FALSE(accepts(*any, "<\xED\xA0\x80>"));  // surrogate
  auto neg = compile("root ::= [^a-z\\u00e9]+");
  EXPECT_TRUE(accepts(*neg, "XY\xC3\xA8"));  // è
  EXPECT_FALSE(accepts(*neg, "X\xC3\xA9"));  // é excluded
  EXPECT_FALSE(accepts(*neg, "Xa"));
  auto esc = compile(R"G(root ::= "\x41\u00e9\U0001F600\t\n\\\"\[\]")G");
  EXPECT_TRUE(accepts(*esc, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\\\"[]"));
}

TEST(GrammarMatcher, PartialCodePointAcrossTokens) {
  auto g = compile("root ::= [一-鿿] \"!\"");  // 中 = E4 B8 AD
  const int32_t e4 = id_of("\xE4"), b8 = id_of("\xB8"), ad = id_of("\xAD"), bang = id_of("!");
  GrammarState s = g->advance(g->initial(), e4);
  ASSERT_NE(s, kDeadState);
  EXPECT_FALSE(g->accepting(s));
  EXPECT_TRUE(g->can_continue(s));
  s = g->advance(s, b8);
  ASSERT_NE(s, kDeadState);
  EXPECT_FALSE(g->allows(s, bang));  // the character is not complete
  s = g->advance(s, ad);
  ASSERT_NE(s, kDeadState);
  s = g->advance(s, bang);
  ASSERT_NE(s, kDeadState);
  EXPECT_TRUE(g->accepting(s));
  // A 3-byte lead that cannot start a CJK ideograph (U+E000..) dies at the first byte.
  EXPECT_EQ(g->advance(g->initial(), id_of("\xEE")), kDeadState);
  // A token with ASCII then a lead byte.
  auto h = compile("root ::= \"a\" [\\u00e0-\\u00ff]");
  const GrammarState p = h->advance(h->initial(), id_of("a\xC3"));
  ASSERT_NE(p, kDeadState);
  EXPECT_TRUE(h->allows(p, id_of("\xA9")));
  EXPECT_FALSE(h->allows(p, id_of("\x80")));  // U+00C0 is outside
}

TEST(GrammarMatcher, EogOnlyWhenAcceptingThenFinished) {
  auto g = compile("root ::= \"a\"+");
  const auto& v = tok().vocab();
  const int32_t eos = *v.eos(), a = id_of("a");
  EXPECT_FALSE(g->allows(g->initial(), eos));
  EXPECT_EQ(g->advance(g->initial(), eos), kDeadState);
  const GrammarState s = g->advance(g->initial(), a);
  EXPECT_TRUE(g->accepting(s));
  EXPECT_TRUE(g->allows(s, eos));
  for (const int32_t e : v.eog_ids()) EXPECT_TRUE(g->mask(s)->test(e));
  const GrammarState f = g->advance(s, eos);
  ASSERT_NE(f, kDeadState);
  EXPECT_TRUE(g->accepting(f));
  EXPECT_FALSE(g->can_continue(f));
  EXPECT_TRUE(g->complete(f));
  EXPECT_EQ(g->mask(f)->n_allowed, 0);
  EXPECT_FALSE(g->allows(f, a));
  EXPECT_FALSE(g->allows(f, eos));
}

TEST(GrammarMatcher, SpecialTokensOnlyThroughTokenTerminals) {
  const auto& v = tok().vocab();
  const int32_t think = *v.find("<think>"), end_think = *v.find("</think>"), im_start = *v.find("<|im_start|>");
  // The text "<think>" is not matched by the special token, only by bytes.
  auto text = compile("root ::= \"<think>\" \"x\"");
  EXPECT_FALSE(text->allows(text->initial(), think));
  auto g = compile("root ::= <think> [a-z]* </think> \"!\"");
  EXPECT_TRUE(g->allows(g->initial(), think));
  EXPECT_FALSE(g->allows(g->initial(), im_start));
  EXPECT_FALSE(g->allows(g->initial(), id_of("a")));
  GrammarState s = g->advance(g->initial(), think);
  s = g->advance(s, id_of("abc"));
  ASSERT_NE(s, kDeadState);
  const auto m = g->mask(s);
  EXPECT_TRUE(m->test(end_think));
  EXPECT_TRUE(m->test(id_of("a")));
  EXPECT_FALSE(m->test(think));
  s = g->advance(s, end_think);
  EXPECT_TRUE(g->allows(s, id_of("!")));
  // `!<[id]>`: any one token but id (never end-of-generation, never a row without bytes).
  auto n = compile("root ::= !<[" + std::to_string(think) + "]> \"z\"");
  EXPECT_FALSE(n->allows(n->initial(), think));
  EXPECT_TRUE(n->allows(n->initial(), im_start));
  EXPECT_TRUE(n->allows(n->initial(), id_of("abc")));
  EXPECT_FALSE(n->allows(n->initial(), *v.eos()));
  const GrammarState after = n->advance(n->initial(), id_of("abc"));
  EXPECT_TRUE(n->allows(after, id_of("z")));
  EXPECT_EQ(n->mask(n->initial())->n_allowed, n->mask(n->initial())->n_allowed);
  for (int32_t id = 0; id < v.size(); ++id)
    EXPECT_EQ(n->mask(n->initial())->test(id), n->allows(n->initial(), id)) << id;
}

// A token terminal followed by an element no bytes can match (a literal that is no UTF-8: the
// parser reads \xff as the lead of a 4-byte sequence, as llama.cpp does) is a dead end: the mask
// must not offer the token, since advance() rejects it (found by the grammar fuzzer).
TEST(GrammarMask, TokenTerminalBeforeAnUnmatchableElementIsNotOffered) {
  const auto& v = tok().vocab();
  const int32_t think = *v.find("<think>");
  const std::string dead = "\"\xff\xff\xff\xc3\xa9\"";
  for (const std::string& g_text : {"root ::= \"a\" | <[" + std::to_string(think) + "]> " + dead,
                                    "root ::= \"a\" | !<[" + std::to_string(think) + "]> " + dead,
                                    "root ::= [b-c]{1,2} <[" + std::to_string(think) + "]> " + dead + " | \"a\""}) {
    auto g = compile(g_text);
    GrammarState s = g->initial();
    if (g_text.find("[b-c]") != std::string::npos) s = g->advance(s, id_of("b"));
    ASSERT_NE(s, kDeadState) << g_text;
    const auto m = g->mask(s);
    for (int32_t id = 0; id < v.size(); ++id)
      ASSERT_EQ(m->test(id), g->advance(s, id) != kDeadState) << g_text << " token " << id;
    EXPECT_FALSE(m->test(think)) << g_text;
  }
}

void check_mask_exact(const std::string& grammar, uint64_t seed, int steps) {
  auto g = compile(grammar);
  auto fresh = compile(grammar);  // recomputed from scratch along the same path
  const VocabIndex& vi = *vocab().index;
  std::mt19937_64 rng(seed);
  GrammarState s = g->initial(), s2 = fresh->initial();
  for (int step = 0; step < steps; ++step) {
    const auto m = g->mask(s);
    ASSERT_GT(m->n_allowed, 0) << "live state with an empty mask at step " << step;
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < vi.n_vocab(); ++t) {
      bool bf;
      if (vi.is_eog(t)) bf = g->accepting(s);
      else if (vi.is_special(t)) bf = g->advance(s, t) != kDeadState;
      else bf = g->advance_bytes(s, vi.token_bytes(t)) != kDeadState;
      ASSERT_EQ(m->test(t), bf) << "grammar " << grammar << " step " << step << " token " << t << " '"
                                << vi.token_bytes(t) << "'";
      ASSERT_EQ(g->allows(s, t), bf) << "allows, token " << t;
      if (bf) allowed.push_back(t);
    }
    EXPECT_EQ(static_cast<size_t>(m->n_allowed), allowed.size());
    EXPECT_EQ(g->mask(s).get(), m.get());  // cached
    EXPECT_EQ(fresh->mask(s2)->bits, m->bits);
    // Random allowed non-EOG token (EOG only when nothing else is allowed).
    std::vector<int32_t> cont;
    for (const int32_t t : allowed)
      if (!vi.is_eog(t)) cont.push_back(t);
    if (cont.empty()) break;
    const int32_t t = cont[rng() % cont.size()];
    s = g->advance(s, t);
    s2 = fresh->advance(s2, t);
    ASSERT_NE(s, kDeadState);
    ASSERT_NE(s2, kDeadState);
  }
}

TEST(GrammarMask, TrieWalkEqualsBruteForce) {
  const std::vector<std::string> grammars = {
      kAction,
      R"G(root ::= "\"" ( [^"\\] | "\\" ["\\nt] )* "\"")G",
      "root ::= [ぁ-ゟ一-鿿]+ (\" \" [a-z\\u00e0-\\u00ff]+)*",
      "root ::= (\"caf\" [\\u00e9\\u00e8] | \"abc\" | [0-9]{1,3})+",
      "root ::= . . [^a-m]* \"!\"",
      "root ::= (<think> [^<]* </think>)? [a-c]+",
      R"G(root ::= obj
obj ::= "{" ws (str ":" ws val ("," ws str ":" ws val)*)? "}"
val ::= obj | str | [0-9]+ | "[" ws (val ("," ws val)*)? "]"
str ::= "\"" [^"\\\x00-\x1F]* "\""
ws ::= [ \n]?)G",
  };
  uint64_t seed = 1;
  for (const auto& gr : grammars)
    for (int run = 0; run < 3; ++run) check_mask_exact(gr, seed++, 24);
}

// States with more than 64 parse stacks take the byte-by-byte transition path.
TEST(GrammarMask, ManyStacksEqualsBruteForce) {
  GrammarLimits lim;
  lim.max_stacks_per_state = 1 << 15;
  auto g = compile(R"G(root ::= s
s ::= "a" s "b" | "a" s "c" | "")G", lim);
  const VocabIndex& vi = *vocab().index;
  for (const char* prefix : {"aaaaaaa", "aaaaaaab", "aaaaaaaac"}) {
    const GrammarState s = g->advance_bytes(g->initial(), prefix);
    ASSERT_NE(s, kDeadState) << prefix;
    const auto m = g->mask(s);
    for (int32_t t = 0; t < vi.n_vocab(); ++t) {
      const bool bf = vi.is_eog(t) ? g->accepting(s)
                      : vi.is_special(t) ? false
                                         : g->advance_bytes(s, vi.token_bytes(t)) != kDeadState;
      ASSERT_EQ(m->test(t), bf) << prefix << " token " << t;
    }
  }
}

TEST(GrammarMask, IdenticalMasksAreShared) {
  auto g = compile("root ::= [a-z]* \"!\"");
  const GrammarState s1 = g->advance_bytes(g->initial(), "ab");
  const auto m0 = g->mask(g->initial());
  EXPECT_EQ(g->mask(s1).get(), m0.get());  // same stack set: the same state, so the same mask
  auto h = compile("root ::= x | y\nx ::= [a-c] [0-9]\ny ::= [a-c] [0-9]");
  const GrammarState a = h->advance_bytes(h->initial(), "a");
  const GrammarState b = h->advance_bytes(h->initial(), "b");
  EXPECT_EQ(h->mask(a).get(), h->mask(b).get());
  const auto st = h->stats();
  EXPECT_GE(st.mask_hits + st.mask_misses, 2);
}

std::vector<int32_t> forced(CompiledGrammar& g, GrammarState s) {
  std::vector<int32_t> out{999};
  g.forced_tokens(s, out);
  return out;
}

TEST(GrammarForced, CanonicalTokensOfForcedBytes) {
  auto g = compile(R"G(root ::= "home" [0-9])G");
  // F = "home": canonical tokenization; no vocabulary token is longer and starts with "home"
  // allowed ("home" + digit is not a token).
  EXPECT_EQ(forced(*g, g->initial()), tok().encode("home", text::EncodeOptions{.parse_special = false}));
  auto lit = compile(R"G(root ::= "type the text" ("a" | "b"))G");
  const auto f = forced(*lit, lit->initial());
  const auto full = tok().encode("type the text", text::EncodeOptions{.parse_special = false});
  ASSERT_LE(f.size(), full.size());
  EXPECT_TRUE(std::equal(f.begin(), f.end(), full.begin()));
  EXPECT_EQ(tok().decode(f), std::string("type the text").substr(0, tok().decode(f).size()));
  // Forced runs follow the grammar: advancing over them is legal.
  GrammarState s = lit->initial();
  for (const int32_t t : f) s = lit->advance(s, t);
  EXPECT_NE(s, kDeadState);
  // Cached: the same answer again.
  EXPECT_EQ(forced(*lit, lit->initial()), f);
  EXPECT_EQ(lit->stats().forced_runs, 1u);
}

TEST(GrammarForced, HoldsBackWhenALongerTokenSpansTheEnd) {
  // "abc" is a token: after the forced "ab", "c" may follow, so "ab" could be the start of the
  // canonical "abc" and is held back.
  auto spans = compile(R"G(root ::= "ab" ("c" | "d"))G");
  EXPECT_TRUE(forced(*spans, spans->initial()).empty());
  // "abx" / "aby" are not tokens: "ab" is safe to force.
  auto safe = compile(R"G(root ::= "ab" ("x" | "y"))G");
  EXPECT_EQ(forced(*safe, safe->initial()), std::vector<int32_t>{id_of("ab")});
  // Only the last tokens are held back: the run keeps its start.
  auto two = compile(R"G(root ::= "tap abc" ("c" | "d"))G");
  const auto f = forced(*two, two->initial());
  const auto full = tok().encode("tap abc", text::EncodeOptions{.parse_special = false});
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(std::equal(f.begin(), f.end(), full.begin()));
}

// The rule, checked independently over the whole vocabulary: the forced run is the canonical
// tokenization of the forced bytes F with final tokens dropped exactly while some allowed
// normal token is longer than F's rest from that token's start and begins with it.
TEST(GrammarForced, EqualsBruteForceHoldBack) {
  const VocabIndex& vi = *vocab().index;
  for (const std::string gr : {R"G(root ::= "{\"action\":\"" ("tap" | "type") "\"}")G",
                               R"G(root ::= "caf\u00e9 " [a-z])G", R"G(root ::= "abc" "12"? "x")G",
                               R"G(root ::= " the text" ("\":\"" | "."))G", R"G(root ::= "tap ab" ("c" | "d"))G"}) {
    auto g = compile(gr);
    GrammarState s = g->initial();
    std::string f;
    // F: follow single-byte continuations (as the engine does), to a character boundary.
    std::string bytes;
    size_t boundary = 0;
    for (GrammarState cur = s; bytes.size() < 64 && !g->accepting(cur);) {
      int only = -1, n = 0;
      for (int b = 0; b < 256; ++b)
        if (g->advance_bytes(cur, std::string(1, static_cast<char>(b))) != kDeadState) only = b, ++n;
      if (n != 1) break;
      bytes += static_cast<char>(only);
      cur = g->advance_bytes(cur, std::string(1, static_cast<char>(only)));
      const unsigned char c = static_cast<unsigned char>(only);
      if (c < 0x80 || (c & 0xC0) == 0x80) {
        // boundary when the text so far is complete UTF-8
        bool complete = true;
        size_t i = 0;
        while (i < bytes.size()) {
          const unsigned char l = static_cast<unsigned char>(bytes[i]);
          const size_t len = l < 0x80 ? 1 : l < 0xE0 ? 2 : l < 0xF0 ? 3 : 4;
          if (i + len > bytes.size()) complete = false;
          i += len;
        }
        if (complete) boundary = bytes.size();
      }
    }
    f = bytes.substr(0, boundary);
    auto toks = tok().encode(f, text::EncodeOptions{.parse_special = false});
    std::vector<size_t> start;
    size_t off = 0;
    for (const int32_t t : toks) start.push_back(off), off += vi.token_bytes(t).size();
    size_t keep = toks.size();
    for (size_t j = toks.size(); j-- > 0 && toks.size() - j <= 4;) {
      const std::string rem = f.substr(start[j]);
      bool spans = false;
      for (int32_t t = 0; t < vi.n_vocab() && !spans; ++t) {
        if (vi.is_special(t)) continue;
        const std::string_view tb = vi.token_bytes(t);
        if (tb.size() > rem.size() && tb.substr(0, rem.size()) == rem &&
            g->advance_bytes(s, f.substr(0, start[j]) + std::string(tb)) != kDeadState)
          spans = true;
      }
      if (!spans) break;
      keep = j;
    }
    toks.resize(keep);
    EXPECT_EQ(forced(*g, s), toks) << gr << " F='" << f << "'";
  }
}

TEST(GrammarForced, ChoicesAndCompleteStates) {
  auto g = compile(R"G(root ::= ("a" | "b") "c")G");
  EXPECT_TRUE(forced(*g, g->initial()).empty());
  const GrammarState done = g->advance_bytes(g->initial(), "ac");
  ASSERT_TRUE(g->complete(done));
  EXPECT_EQ(forced(*g, done), std::vector<int32_t>{*tok().vocab().eos()});
  auto opt = compile(R"G(root ::= "a" "b"?)G");
  const GrammarState a = opt->advance_bytes(opt->initial(), "a");
  EXPECT_TRUE(opt->accepting(a));
  EXPECT_FALSE(opt->complete(a));
  EXPECT_TRUE(forced(*opt, a).empty());  // ending is a choice
  // Stops at a character boundary: the forced bytes of "中" are only forced as a whole.
  auto cjk = compile("root ::= \"\xE4\xB8\xAD\xE6\x96\x87\" [0-9]");
  const auto f = forced(*cjk, cjk->initial());
  EXPECT_EQ(tok().decode(f), "\xE4\xB8\xAD\xE6\x96\x87");
}

TEST(GrammarLimits, AmbiguityStaysSmall) {
  auto g = compile(R"G(root ::= ("a" | "a")* | ("a" "a"?)*)G");
  const auto t0 = std::chrono::steady_clock::now();
  GrammarState s = g->advance_bytes(g->initial(), std::string(5000, 'a'));
  ASSERT_NE(s, kDeadState);
  EXPECT_TRUE(g->accepting(s));
  EXPECT_LT(g->stats().states, 20u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST(GrammarLimits, ExponentialStacksHitTheLimit) {
  // After n "a"s there are 2^n pending suffixes of "b"/"c".
  auto g = compile(R"G(root ::= s
s ::= "a" s "b" | "a" s "c" | "")G");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(g->advance_bytes(g->initial(), std::string(40, 'a')), GrammarLimitError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(GrammarLimits, DepthStatesAndBytes) {
  GrammarLimits lim;
  lim.max_stack_depth = 64;
  auto deep = compile("root ::= \"(\" root \")\" | \"x\"", lim);
  EXPECT_NO_THROW(deep->advance_bytes(deep->initial(), std::string(30, '(')));
  try {
    deep->advance_bytes(deep->initial(), std::string(100, '('));
    FAIL() << "no limit error";
  } catch (const GrammarLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("max_stack_depth"), std::string::npos) << e.what();
  }
  lim = {};
  lim.max_states = 40;
  auto many = compile("root ::= \"(\" root \")\" | \"x\"", lim);
  try {
    many->advance_bytes(many->initial(), std::string(100, '('));
    FAIL() << "no limit error";
  } catch (const GrammarLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("max_states"), std::string::npos) << e.what();
  }
  lim = {};
  lim.max_bytes = 64 << 10;
  auto mem = compile(R"G(root ::= [a-z]{0,50})G", lim);
  try {
    GrammarState s = mem->initial();
    for (int i = 0; i < 50; ++i) {
      mem->mask(s);
      s = mem->advance_bytes(s, "q");
    }
    FAIL() << "no limit error";
  } catch (const GrammarLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("max_bytes"), std::string::npos) << e.what();
  }
}

TEST(GrammarLimits, CompileErrors) {
  EXPECT_THROW(compile("root ::= \"a\"{3000}"), GrammarError);
  EXPECT_THROW(compile("root ::= [^\\x00-\\U0010FFFF]"), GrammarError);  // accepts nothing
  GrammarLimits lim;
  lim.max_stacks_per_state = 4;
  EXPECT_THROW(compile("root ::= \"a\" | \"b\" | \"c\" | \"d\" | \"e\" | \"f\"", lim), GrammarError);
}

TEST(GrammarMatcher, ConcurrentUseIsSafe) {
  auto g = compile(kAction);
  const std::string text = R"G({"action":"type","text":"hello there"})G";
  const auto ids = tok().encode(text, text::EncodeOptions{.parse_special = false});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        GrammarState s = g->initial();
        for (const int32_t id : ids) {
          g->mask(s);
          s = g->advance(s, id);
          if (s == kDeadState) return;
        }
        if (g->accepting(s)) ++ok;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 80);
}

}  // namespace
}  // namespace tandem::grammar
