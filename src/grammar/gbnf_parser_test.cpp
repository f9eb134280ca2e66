#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "grammar/grammar_test_vocab.h"

namespace tandem::grammar {
namespace {

using testing::vocab;

ParsedGrammar parse(const std::string& s) { return parse_gbnf(s, GrammarLimits{}, vocab().index.get()); }

// The GrammarError message, or "" when the text parses.
std::string error_of(const std::string& s, const GrammarLimits& lim = {}) {
  try {
    parse_gbnf(s, lim, vocab().index.get());
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

// Grammars modeled on llama.cpp's grammars/ directory and tests/test-grammar-parser.cpp.
const char* kParserArithmetic = R"G(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)G";

const char* kParserJson = R"G(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)G";

const char* kParserChess = R"G(
root   ::= (
    # it must start with the characters "1. " followed by a sequence
    # of moves that can be made on a chessboard.
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move   ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle ::= "O-O" "-O"?
)G";

const char* kParserList = R"G(
root ::= item+
# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)G";

const char* kParserJapanese = R"G(
# A probably incorrect grammar for Japanese
root        ::= jp-char+ ([ \t\n] jp-char+)*
jp-char     ::= hiragana | katakana | punctuation | cjk
hiragana    ::= [ぁ-ゟ]
katakana    ::= [ァ-ヿ]
punctuation ::= [、-〾]
cjk         ::= [一-鿿]
)G";

TEST(GbnfParser, AcceptsLlamaCppExampleGrammars) {
  for (const char* g : {kParserArithmetic, kParserJson, kParserChess, kParserList, kParserJapanese}) {
    const ParsedGrammar p = parse(g);
    EXPECT_FALSE(p.rules.empty());
    EXPECT_EQ(p.names[p.root], "root");
  }
}

TEST(GbnfParser, AcceptsTheParserTestsCases) {
  for (const char* g : {
           "root ::= \"a\"",
           "root ::= \"a\" | [bdx-z] | [^1-3]",
           "root ::= a+\na ::= \"a\"",
           "root ::= \"a\"*",
           "root ::= \"a\"?",
           "root ::= (\"a\" | \"b\")* \"c\"",
           "root ::= \"a\"{3}",
           "root ::= \"a\"{2,}",
           "root ::= \"a\"{0,5}",
           "root ::= \"a\"{ 1 , 3 }",
           "root ::= (\n  \"a\"\n  | \"b\"\n)",
           "root ::= \"a\" |\n  \"b\"",
           "root ::= [\\x41-\\x5A\\u00e9\\U0001F600] \"\\t\\r\\n\\\\\\\"\\[\\]\"",
           "root ::= .",
           "root ::= . .* \"x\"",
           "# comment\nroot ::= \"a\" # trailing\n\n# another\n",
           "root ::= \"\"",
           "root ::= \"a\"\r\nb ::= \"b\"\r\n",
           "root ::= <[5]> !<[6]> \"x\"",
           "root ::= <think> [^<]* </think>",
           "root ::= !<think> \"x\"",
           "root ::= \"a\" \"b\"+ ( \"c\" \"d\"{2,4} )? ",
           "root ::= [\\]\\[-]",
           "root ::= [-a]",
           "root ::= [a-]",
       }) {
    EXPECT_EQ(error_of(g), "") << g;
  }
}

TEST(GbnfParser, RewritesRepetitionsAsLlamaCpp) {
  // S{2,4} -> S S S'(2), S'(2) ::= S S'(1) | , S'(1) ::= S |
  const ParsedGrammar p = parse("root ::= \"a\"{2,4}");
  EXPECT_EQ(p.rules.size(), 3u);
  const std::string printed = print_gbnf(p);
  EXPECT_NE(printed.find("root ::= [a] [a] root_2"), std::string::npos) << printed;
  EXPECT_NE(printed.find("root_1 ::= [a] |"), std::string::npos) << printed;
  EXPECT_NE(printed.find("root_2 ::= [a] root_1 |"), std::string::npos) << printed;
  // S* -> S', S' ::= S S' |
  const std::string star = print_gbnf(parse("root ::= \"b\"*"));
  EXPECT_NE(star.find("root_1 ::= [b] root_1 |"), std::string::npos) << star;
}

TEST(GbnfParser, TokenTerminalsResolveIds) {
  const auto& v = vocab().tok->vocab();
  const ParsedGrammar p = parse("root ::= <think> !<[3]>");
  ASSERT_EQ(p.rules[p.root].size(), 3u);
  EXPECT_EQ(p.rules[p.root][0].type, ElemType::Token);
  EXPECT_EQ(static_cast<int32_t>(p.rules[p.root][0].value), *v.find("<think>"));
  EXPECT_EQ(p.rules[p.root][1].type, ElemType::TokenNot);
  EXPECT_EQ(p.rules[p.root][1].value, 3u);
}

void expect_error(const std::string& g, const std::string& part, const GrammarLimits& lim = {}) {
  const std::string e = error_of(g, lim);
  EXPECT_NE(e.find(part), std::string::npos) << "grammar: " << g << "\nerror: " << e;
}

TEST(GbnfParser, RejectsWithPositionedMessages) {
  expect_error("root \"a\"", "GBNF parse error at 1:6 (byte 5): expected '::=' after rule name 'root'");
  expect_error("root ::= \"a\"\nfoo bar", "at 2:5 (byte 17): expected '::=' after rule name 'foo'");
  expect_error("root ::= \"a", "unterminated string literal");
  expect_error("root ::= [a-z", "unterminated character class");
  expect_error("root ::= (\"a\"", "expected ')'");
  expect_error("root ::= \"\\d\"", "at 1:11 (byte 10): unknown escape \\d");
  expect_error("root ::= \"\\x4\"", "expected 2 hex digits");
  expect_error("root ::= \"\\u12G4\"", "expected 4 hex digits");
  expect_error("root ::= *", "expected an item before the repetition operator");
  expect_error("root ::= \"a\"{", "expected an integer after '{'");
  expect_error("root ::= \"a\"{2", "expected ',' or '}'");
  expect_error("root ::= \"a\"{2,3", "expected '}'");
  expect_error("root ::= \"a\"{3,2}", "below its minimum");
  expect_error("root ::= \"a\" )", "expected a newline or the end after rule 'root'");
  expect_error("root ::= ::=", "expected a newline or the end");
  expect_error("::= \"a\"", "expected a rule name");
  expect_error("root ::= []", "empty character class");
  expect_error("root ::= <[99999999]>", "outside the vocabulary");
  expect_error("root ::= <[12>", "expected ']'");
  expect_error("root ::= <nope-not-a-token>", "invalid token '<nope-not-a-token>'");
  expect_error("root ::= <think", "expected '>'");
  expect_error(std::string("root ::= \"a\"\0", 13), "unexpected NUL byte");
}

TEST(GbnfParser, ChecksRulesRootAndLeftRecursion) {
  expect_error("root ::= foo", "undefined rule identifier 'foo'");
  expect_error("root ::= \"a\" | bar\nbaz ::= \"b\"", "undefined rule identifier 'bar'");
  expect_error("foo ::= \"a\"", "grammar does not contain a 'root' symbol");
  expect_error("root ::= root \"a\" | \"b\"", "unsupported grammar, left recursion detected");
  expect_error("root ::= a\na ::= b \"x\"\nb ::= root | \"y\"", "left recursion detected");
  // Through a nullable prefix (llama.cpp only sees a directly empty alternative).
  expect_error("root ::= e root \"x\" | \"y\"\ne ::= f\nf ::= \"\"", "left recursion detected");
  expect_error("root ::= (\"a\"*)*", "left recursion detected");
  // Right recursion is fine.
  EXPECT_EQ(error_of("root ::= \"a\" root | \"\""), "");
}

TEST(GbnfParser, RepetitionLimits) {
  expect_error("root ::= \"a\"{2001}", "number of repetitions exceeds sane defaults");
  EXPECT_EQ(error_of("root ::= \"a\"{2000}"), "");
  // A maximum above the threshold means unbounded (llama.cpp).
  const ParsedGrammar p = parse("root ::= \"a\"{1,5000}");
  EXPECT_LT(p.rules.size(), 5u);
  expect_error("root ::= ((\"a\" \"b\"?){1000}){1000}", "exceeds sane defaults");
  GrammarLimits small;
  small.max_rules = 50;
  expect_error("root ::= \"a\"{0,100}", "max_rules", small);
  small = {};
  small.max_elements = 1000;
  expect_error("root ::= \"abcdefghij\"{200}", "max_elements", small);
}

TEST(GbnfParser, NestingIsCapped) {
  std::string deep = "root ::= ";
  for (int i = 0; i < 300; ++i) deep += "(";
  deep += "\"a\"";
  for (int i = 0; i < 300; ++i) deep += ")";
  expect_error(deep, "parentheses nested deeper than 256");
  std::string ok = "root ::= ";
  for (int i = 0; i < 200; ++i) ok += "(";
  ok += "\"a\"";
  for (int i = 0; i < 200; ++i) ok += ")";
  EXPECT_EQ(error_of(ok), "");
}

TEST(GbnfParser, SourceSizeLimit) {
  GrammarLimits lim;
  lim.max_source_bytes = 10;
  expect_error("root ::= \"abcdefgh\"", "max_source_bytes", lim);
}

// Arbitrary bytes and mutations of valid grammars: a GrammarError or a grammar, never a crash,
// quickly (the libFuzzer target does the same at scale).
TEST(GbnfParser, RandomInputNeverCrashes) {
  std::mt19937_64 rng(42);
  const std::string alphabet = "root ::= \"a\" [^b-c] ( ) | * + ? {2,3} . <[1]> !<think> \\x41 \\u00e9 # \n\r\t-x";
  const std::vector<std::string> seeds = {kParserArithmetic, kParserJson, kParserChess, kParserList, kParserJapanese};
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    if (i % 3 == 0) {
      const size_t n = rng() % 64;
      for (size_t k = 0; k < n; ++k) s += static_cast<char>(rng() % 256);
    } else if (i % 3 == 1) {
      const size_t n = rng() % 80;
      s = "root ::= ";
      for (size_t k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    } else {
      s = seeds[rng() % seeds.size()];
      for (int m = 0; m < 3; ++m) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    }
    try {
      parse_gbnf(s, GrammarLimits{}, vocab().index.get());
    } catch (const GrammarError&) {
    }
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

}  // namespace
}  // namespace tandem::grammar
