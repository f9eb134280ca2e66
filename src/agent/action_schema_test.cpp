// The action schema as constrained decoding uses it: converted to a grammar (compact and
// flexible whitespace) without a warning, and every answer that grammar admits passes
// parse_action. A model with random weights walks the grammar much as these random walks do, so
// a sentence the grammar admits and the parser refuses would show up as a failed parse in the
// main job's constrained configurations; here it shows up first, with the text.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "agent/action.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_test_vocab.h"
#include "grammar/json_schema.h"

namespace tandem::agent {
namespace {

using grammar::CompiledGrammar;
using grammar::GrammarState;
using grammar::JsonWhitespace;
using grammar::kDeadState;

class ActionSchemaGrammar : public ::testing::TestWithParam<JsonWhitespace> {
 protected:
  static void SetUpTestSuite() {
    tok_ = grammar::testing::TestVocabBuilder().build().release();
    vocab_ = std::make_shared<grammar::VocabIndex>(*tok_);
  }
  std::shared_ptr<CompiledGrammar> compile() {
    grammar::SchemaOptions opt;
    opt.whitespace = GetParam();
    const grammar::SchemaGrammar g = grammar::json_schema_to_gbnf(action_schema(), opt);
    EXPECT_TRUE(g.warnings.empty()) << "the converter ignores part of the action schema: " << g.warnings.front();
    return CompiledGrammar::compile(g.gbnf, vocab_);
  }
  static bool admits(CompiledGrammar& g, const std::string& text) {
    const GrammarState s = g.advance_bytes(g.initial(), text);
    return s != kDeadState && g.accepting(s);
  }
  static inline const text::Tokenizer* tok_ = nullptr;
  static inline std::shared_ptr<grammar::VocabIndex> vocab_;
};

TEST_P(ActionSchemaGrammar, EveryAdmittedAnswerParses) {
  auto g = compile();
  std::mt19937_64 rng(GetParam() == JsonWhitespace::Compact ? 1 : 2);
  int kinds_seen[16] = {};
  for (int walk = 0; walk < 1500; ++walk) {
    // A random walk over bytes: any legal byte, uniformly; stop at an accepting state with
    // probability 1/4 (or when nothing may follow), so that strings and integers mostly run to
    // their bounds, as a model with random weights does.
    std::string text;
    GrammarState s = g->initial();
    while (true) {
      if (g->accepting(s) && (!g->can_continue(s) || rng() % 4 == 0)) break;
      std::vector<std::pair<unsigned char, GrammarState>> next;
      for (int b = 0; b < 256; ++b) {
        const GrammarState n = g->advance_bytes(s, std::string(1, static_cast<char>(b)));
        if (n != kDeadState) next.emplace_back(static_cast<unsigned char>(b), n);
      }
      ASSERT_FALSE(next.empty()) << "a live state with no legal byte after: " << text;
      const auto& [b, n] = next[rng() % next.size()];
      text += static_cast<char>(b);
      s = n;
      ASSERT_LT(text.size(), 1024u) << "runaway answer: " << text.substr(0, 200);
    }
    const ParseResult r = parse_action(text);
    ASSERT_TRUE(r.ok()) << "the grammar admits\n  " << text << "\nbut parse_action says: " << r.error;
    ++kinds_seen[static_cast<int>(r.action->kind)];
    // The bounds hold (in characters; bytes here, which can only be more).
    if (r.action->kind == ActionKind::OpenApp) EXPECT_LE(r.action->text.size(), 4u * kMaxSchemaApp);
    else EXPECT_LE(r.action->text.size(), 4u * kMaxSchemaText);
    EXPECT_LE(r.action->index, kMaxSchemaIndex);
  }
  for (int k = 0; k < 10; ++k) EXPECT_GT(kinds_seen[k], 0) << "no walk produced " << to_string(static_cast<ActionKind>(k));
}

TEST_P(ActionSchemaGrammar, AdmitsThePromptsFormsAndTheBounds) {
  auto g = compile();
  for (const char* ok : {
           R"({"action":"tap","index":0})", R"({"action":"tap","index":999})",
           R"({"action":"input","index":2,"text":"coffee"})",  // the prompt's order: index first
           R"({"action":"input","text":""})", R"({"action":"scroll","direction":"down","index":5})",
           R"({"action":"swipe","from":[0,9999],"to":[500,400]})", R"({"action":"open_app","app":"Google Maps"})",
           R"({"action":"wait"})", R"({"action":"wait","seconds":60})",
           R"({"action":"finish","status":"infeasible","message":"no such alarm"})"})
    EXPECT_TRUE(admits(*g, ok)) << ok;
  const std::string text48(kMaxSchemaText, 'x'), app32(kMaxSchemaApp, 'A');
  EXPECT_TRUE(admits(*g, R"({"action":"input","text":")" + text48 + "\"}"));
  EXPECT_TRUE(admits(*g, R"({"action":"open_app","app":")" + app32 + "\"}"));
  for (const std::string& bad : {
           std::string(R"({"action":"tap","index":1000})"), std::string(R"({"action":"tap","index":01})"),
           std::string(R"({"action":"input","text":"x","index":2})"),  // the converter's required-first order is not used
           R"({"action":"input","text":")" + text48 + "x\"}", R"({"action":"open_app","app":")" + app32 + "A\"}",
           std::string(R"({"action":"open_app","app":" Maps"})"), std::string(R"({"action":"open_app","app":""})"),
           std::string(R"({"action":"wait","seconds":0})"), std::string(R"({"action":"wait","seconds":1.5})"),
           std::string(R"({"action":"swipe","from":[0,10000],"to":[1,1]})"), std::string(R"({"action":"click","index":1})")})
    EXPECT_FALSE(admits(*g, bad)) << bad;
}

INSTANTIATE_TEST_SUITE_P(Whitespace, ActionSchemaGrammar, ::testing::Values(JsonWhitespace::Compact, JsonWhitespace::Flexible),
                         [](const auto& info) { return info.param == JsonWhitespace::Compact ? "Compact" : "Flexible"; });

}  // namespace
}  // namespace tandem::agent
