// What the converted grammars accept, through CompiledGrammar over bytes (the vocabulary does
// not matter here: the generator's built-in one). The printed text is in json_schema_test.cpp;
// the conformance against python3-jsonschema is tests/grammar/schema_conformance.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/vocab_index.h"
#include "text/test_vocab.h"

namespace tandem::grammar {
namespace {

std::shared_ptr<const VocabIndex> builtin_vocab_index() {
  static const std::unique_ptr<text::Tokenizer> tok = text::testing::builtin_tokenizer();
  static const std::shared_ptr<const VocabIndex> index = std::make_shared<VocabIndex>(*tok);
  return index;
}

class Schema {
 public:
  explicit Schema(const std::string& text, JsonWhitespace ws = JsonWhitespace::Flexible) {
    SchemaOptions o;
    o.whitespace = ws;
    gbnf_ = json_schema_text_to_gbnf(text, o).gbnf;
    g_ = CompiledGrammar::compile(gbnf_, builtin_vocab_index());
  }
  static Schema from_gbnf(const std::string& gbnf) { return Schema(gbnf, 0); }
  bool accepts(std::string_view doc) const {
    const GrammarState s = g_->advance_bytes(g_->initial(), doc);
    return s != kDeadState && g_->accepting(s);
  }
  const std::string& gbnf() const { return gbnf_; }

 private:
  Schema(const std::string& gbnf, int) : gbnf_(gbnf), g_(CompiledGrammar::compile(gbnf, builtin_vocab_index())) {}
  std::string gbnf_;
  std::shared_ptr<CompiledGrammar> g_;
};

const char* kActionSchema = R"({"type":"object","properties":{"action":{"enum":["tap","type","back"]},
    "index":{"type":"integer","minimum":0},"text":{"type":"string"}},"required":["action"]})";

TEST(JsonSchemaMatch, ActionSchemaFlexible) {
  const Schema s(kActionSchema);
  EXPECT_TRUE(s.accepts(R"({"action":"tap","index":3})"));
  EXPECT_TRUE(s.accepts("{\n  \"action\": \"tap\",\n  \"index\": 3\n}"));
  EXPECT_TRUE(s.accepts(R"({"action":"back"})"));
  EXPECT_TRUE(s.accepts(R"({"action":"type","text":"h\u00e9llo \"x\""})"));
  EXPECT_FALSE(s.accepts(R"({"index":3,"action":"tap"})"));    // declaration order
  EXPECT_FALSE(s.accepts(R"({"action":"tap","index":-1})"));   // minimum: 0
  EXPECT_FALSE(s.accepts(R"({"action":"tap","index":03})"));   // no leading zeros
  EXPECT_FALSE(s.accepts(R"({"action":"tap","extra":1})"));    // additionalProperties false
  EXPECT_FALSE(s.accepts(R"({"action":"jump"})"));
  EXPECT_FALSE(s.accepts(R"({"action":"tap")"));               // incomplete
  EXPECT_FALSE(s.accepts(R"({"index":3})"));                   // required
  EXPECT_FALSE(s.accepts("{\"action\":\"type\",\"text\":\"a\nb\"}"));  // raw control character
}

TEST(JsonSchemaMatch, DeclarationOrder) {
  SchemaOptions o;
  o.whitespace = JsonWhitespace::Compact;
  o.order = PropertyOrder::Declaration;
  const auto g = CompiledGrammar::compile(
      json_schema_text_to_gbnf(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
          "c":{"type":"integer"}},"required":["b"],"additionalProperties":{"type":"null"}})",
                               o)
          .gbnf,
      builtin_vocab_index());
  auto accepts = [&](std::string_view doc) {
    const GrammarState st = g->advance_bytes(g->initial(), doc);
    return st != kDeadState && g->accepting(st);
  };
  for (const char* ok : {R"({"b":1})", R"({"a":0,"b":1})", R"({"b":1,"c":2})", R"({"a":0,"b":1,"c":2})",
                         R"({"a":0,"b":1,"x":null,"y":null})", R"({"b":1,"x":null})"})
    EXPECT_TRUE(accepts(ok)) << ok;
  for (const char* bad : {R"({})", R"({"a":0})", R"({"b":1,"a":0})", R"({"x":null,"b":1})", R"({"a":0,,"b":1})",
                          R"({,"b":1})"})
    EXPECT_FALSE(accepts(bad)) << bad;
}

TEST(JsonSchemaMatch, CompactAllowsNoWhitespace) {
  const Schema s(kActionSchema, JsonWhitespace::Compact);
  EXPECT_TRUE(s.accepts(R"({"action":"tap","index":3})"));
  EXPECT_FALSE(s.accepts(R"({"action": "tap","index":3})"));
  EXPECT_FALSE(s.accepts(R"({"action":"tap","index":3} )"));
  EXPECT_FALSE(s.accepts(R"({ "action":"tap"})"));
}

TEST(JsonSchemaMatch, IntegerRangesAreExact) {
  const std::pair<const char*, std::pair<int, int>> cases[] = {
      {R"({"type":"integer","minimum":0})", {0, 1000000}},
      {R"({"type":"integer","minimum":-37,"maximum":205})", {-37, 205}},
      {R"({"type":"integer","exclusiveMinimum":-10,"exclusiveMaximum":-2})", {-9, -3}},
      {R"({"type":"integer","minimum":99,"maximum":1000})", {99, 1000}},
      {R"({"type":"integer","maximum":-100})", {-1000000, -100}},
      {R"({"type":"integer","minimum":7,"maximum":7})", {7, 7}},
  };
  for (const auto& [schema, range] : cases) {
    const Schema s(schema, JsonWhitespace::Compact);
    for (int x = -1200; x <= 1200; ++x)
      EXPECT_EQ(s.accepts(std::to_string(x)), range.first <= x && x <= range.second) << schema << " x=" << x;
    EXPECT_FALSE(s.accepts("-0"));
    EXPECT_FALSE(s.accepts("1.5"));
  }
  const Schema big(R"({"type":"integer","minimum":0})");
  EXPECT_TRUE(big.accepts("9999999999999999"));
  EXPECT_FALSE(big.accepts("10000000000000000"));  // 16 digits, as llama.cpp's integral-part
}

TEST(JsonSchemaMatch, NumberRangesAreSound) {
  struct Case {
    const char* schema;
    double lo, hi;
    bool lo_excl, hi_excl;
    std::vector<const char*> must_accept;
  };
  const Case cases[] = {
      {R"({"type":"number","minimum":0})", 0, 1e300, false, false, {"0", "0.5", "12.25", "7"}},
      {R"({"type":"number","exclusiveMinimum":0,"maximum":1})", 0, 1, true, false, {"0.5", "0.001", "1", "1.0"}},
      {R"({"type":"number","minimum":-2.5,"exclusiveMaximum":3})", -2.5, 3, false, true, {"-2", "-2.0", "-1.5", "0", "2.9"}},
      {R"({"type":"number","maximum":-1.5})", -1e300, -1.5, false, false, {"-2", "-3.75", "-100"}},
      {R"({"minimum":1.1})", 1.1, 1e300, false, false, {"2", "2.5"}},
  };
  for (const auto& c : cases) {
    const Schema s(c.schema, JsonWhitespace::Compact);
    for (const char* a : c.must_accept) EXPECT_TRUE(s.accepts(a)) << c.schema << " " << a;
    // Every number it accepts is in range (tenths from -40 to 40, and a few spellings).
    for (int i = -400; i <= 400; ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", i / 10.0);
      for (std::string text : {std::string(buf), std::to_string(i / 10), std::string(buf) + "00"}) {
        const double x = std::stod(text);
        const bool in = (c.lo_excl ? x > c.lo : x >= c.lo) && (c.hi_excl ? x < c.hi : x <= c.hi);
        if (s.accepts(text)) EXPECT_TRUE(in) << c.schema << " accepts " << text;
      }
    }
    EXPECT_FALSE(s.accepts("1e1"));  // no exponent under bounds
  }
}

TEST(JsonSchemaMatch, Patterns) {
  const Schema s(R"({"type":"string","pattern":"^[a-z]+\\d{2,3}(-x|\\.y)?$"})");
  EXPECT_TRUE(s.accepts(R"("ab12")"));
  EXPECT_TRUE(s.accepts(R"("ab123-x")"));
  EXPECT_TRUE(s.accepts(R"("q99.y")"));
  EXPECT_FALSE(s.accepts(R"("ab1")"));
  EXPECT_FALSE(s.accepts(R"("ab1234")"));
  EXPECT_FALSE(s.accepts(R"("AB12")"));
  // Characters JSON escapes appear escaped in the text: the pattern sees the decoded string.
  const Schema q(R"({"type":"string","pattern":"^a\"\\\\[^b]$"})");  // a, quote, backslash, not b
  EXPECT_TRUE(q.accepts(R"("a\"\\c")"));
  EXPECT_TRUE(q.accepts(R"("a\"\\\n")"));  // a newline matches [^b], written \n
  EXPECT_FALSE(q.accepts(R"("a\"\\b")"));
  const Schema ctl(R"({"type":"string","pattern":"^[\\u0001-\\u0002\\t]+$"})");
  EXPECT_TRUE(ctl.accepts(R"("\u0001\t\u0002")"));
  EXPECT_FALSE(ctl.accepts(R"("\u0003")"));
  EXPECT_FALSE(ctl.accepts(R"("\u0009")"));  // a tab is written \t (canonical escapes only)
  // Unanchored: anywhere in the string.
  const Schema u(R"({"type":"string","pattern":"ab+"})");
  EXPECT_TRUE(u.accepts(R"("xxabbby")"));
  EXPECT_TRUE(u.accepts(R"("ab")"));
  EXPECT_FALSE(u.accepts(R"("a b")"));
  // `.` is any character but a line terminator (ECMA-262), here multi-byte ones too.
  const Schema d(R"({"type":"string","pattern":"^.{2}$"})");
  EXPECT_TRUE(d.accepts("\"\xC3\xA9\xE2\x82\xAC\""));
  EXPECT_FALSE(d.accepts(R"("a\n")"));
  EXPECT_FALSE(d.accepts(R"("abc")"));
}

TEST(JsonSchemaMatch, StringLengthsCountCodePoints) {
  const Schema s(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(s.accepts(R"("ab")"));
  EXPECT_TRUE(s.accepts("\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));  // two emoji, raw
  EXPECT_TRUE(s.accepts(R"("\ud83d\ude00\n")"));                  // a surrogate pair is one
  EXPECT_FALSE(s.accepts(R"("\ud83d\ude00")"));
  EXPECT_FALSE(s.accepts(R"("abcd")"));
  EXPECT_FALSE(s.accepts(R"("a")"));
}

TEST(JsonSchemaMatch, AdditionalPropertiesExcludeDeclaredNames) {
  const Schema s(R"({"type":"object","properties":{"ab":{"type":"string"},"a":{"type":"string"}},
      "additionalProperties":{"type":"integer"}})",
                 JsonWhitespace::Compact);
  EXPECT_TRUE(s.accepts(R"({"ab":"x","a":"y","b":1,"abc":2,"":3})"));
  EXPECT_TRUE(s.accepts(R"({"abc":2})"));
  EXPECT_FALSE(s.accepts(R"({"a":1})"));   // a declared name is not an additional key
  EXPECT_FALSE(s.accepts(R"({"ab":1})"));
  EXPECT_FALSE(s.accepts(R"({"b":"x"})"));
}

TEST(JsonSchemaMatch, RecursiveRefs) {
  const Schema s(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"})",
                 JsonWhitespace::Compact);
  EXPECT_TRUE(s.accepts(R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"));
  EXPECT_FALSE(s.accepts(R"({"v":1,"next":{"v":2}})"));
}

TEST(JsonSchemaMatch, UnionsFormatsAndAnyObject) {
  const Schema u(R"({"oneOf":[{"type":"string","format":"date"},{"type":"array","items":{"type":"boolean"},"maxItems":2}]})");
  EXPECT_TRUE(u.accepts(R"("2026-12-02")"));
  EXPECT_TRUE(u.accepts(R"([true, false])"));
  EXPECT_FALSE(u.accepts(R"("2026-13-02")"));
  EXPECT_FALSE(u.accepts(R"([true,false,true])"));
  const Schema o = Schema::from_gbnf(json_object_gbnf());
  EXPECT_TRUE(o.accepts(R"({"a": [1, {"b": null}], "c": -1.5e3})"));
  EXPECT_TRUE(o.accepts("{}"));
  EXPECT_FALSE(o.accepts("[1]"));
  EXPECT_FALSE(o.accepts(R"("x")"));
  const Schema any(R"({"description":"anything"})");
  EXPECT_TRUE(any.accepts("[1]"));
  EXPECT_TRUE(any.accepts("\"x\""));
  EXPECT_TRUE(any.accepts("null"));
}

}  // namespace
}  // namespace tandem::grammar
