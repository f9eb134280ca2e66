// JSON Schema -> GBNF: the printed grammar for small schemas (llama.cpp's shapes), options,
// warnings and errors. What the grammars accept is in json_schema_match_test.cpp.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/integer_range.h"
#include "grammar/schema_pattern.h"

namespace tandem::grammar {
namespace {

SchemaGrammar convert(const char* text, JsonWhitespace ws = JsonWhitespace::Flexible) {
  SchemaOptions o;
  o.whitespace = ws;
  return json_schema_text_to_gbnf(text, o);
}

// The rule `name` of a grammar ("" when absent).
std::string rule(const std::string& gbnf, const std::string& name) {
  const std::string head = name + " ::= ";
  size_t at = gbnf.rfind("\n" + head);
  if (gbnf.rfind(head, 0) == 0) at = 0;
  else if (at == std::string::npos) return "";
  else ++at;
  const size_t end = gbnf.find('\n', at);
  return gbnf.substr(at + head.size(), end - at - head.size());
}

std::string error_of(const char* text) {
  try {
    convert(text);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonSchemaGbnf, ActionSchemaRequiredFirstFlexible) {
  const auto g = convert(R"({"type":"object","properties":{
      "note":{"type":"string"},"action":{"const":"tap"},"index":{"type":"integer","minimum":0}},
      "required":["index","action"]})");
  EXPECT_EQ(g.gbnf.rfind("root ::= ", 0), 0u);
  // Required ones first, in declaration order (not `required`'s), then the optional one.
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" space action-kv "," space index-kv ( "," space ( note-kv ) )? "}" space)");
  EXPECT_EQ(rule(g.gbnf, "action-kv"), R"("\"action\"" space ":" space action)");
  EXPECT_EQ(rule(g.gbnf, "action"), R"("\"tap\"" space)");
  EXPECT_EQ(rule(g.gbnf, "index"), "([0-9] | [1-9] [0-9]{1,15}) space");
  EXPECT_EQ(rule(g.gbnf, "space"), R"(| " " | "\n"{1,2} [ \t]{0,20})");
  EXPECT_EQ(rule(g.gbnf, "char"), R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))");
  EXPECT_EQ(rule(g.gbnf, "string"), R"("\"" char* "\"" space)");
  EXPECT_TRUE(g.warnings.empty());
}

TEST(JsonSchemaGbnf, CompactHasNoWhitespace) {
  const auto g = convert(R"({"type":"object","properties":{"action":{"const":"tap"},"index":{"type":"integer"}},
      "required":["action","index"]})",
                         JsonWhitespace::Compact);
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" action-kv "," index-kv "}")");
  EXPECT_EQ(rule(g.gbnf, "action-kv"), R"("\"action\"" ":" action)");
  EXPECT_EQ(rule(g.gbnf, "integer"), R"(("-"? integral-part))");
  EXPECT_EQ(g.gbnf.find("space"), std::string::npos);
}

TEST(JsonSchemaGbnf, OptionalPropertiesChainLikeLlamaCpp) {
  const auto g = convert(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"}}})");
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" space ( a-kv a-rest | b-kv b-rest | c-kv )? "}" space)");
  EXPECT_EQ(rule(g.gbnf, "a-rest"), R"(( "," space b-kv )? b-rest)");
  EXPECT_EQ(rule(g.gbnf, "b-rest"), R"(( "," space c-kv )?)");
}

TEST(JsonSchemaGbnf, DeclarationOrderNeedsOrderedJson) {
  // nlohmann::json sorts keys; the text and ordered_json entry points keep the schema's order.
  const char* text = R"({"type":"object","properties":{"z":{"type":"null"},"a":{"type":"null"}},"required":["z","a"]})";
  EXPECT_EQ(rule(convert(text).gbnf, "root"), R"("{" space z-kv "," space a-kv "}" space)");
  EXPECT_EQ(rule(json_schema_to_gbnf(nlohmann::json::parse(text)).gbnf, "root"),
            R"("{" space a-kv "," space z-kv "}" space)");
}

TEST(JsonSchemaGbnf, DeclarationOrderKeepsOptionalPropertiesInPlace) {
  SchemaOptions o;
  o.whitespace = JsonWhitespace::Compact;
  o.order = PropertyOrder::Declaration;
  const auto g = json_schema_text_to_gbnf(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"},
      "c":{"type":"null"}},"required":["b"]})",
                                          o);
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" a-first "}")");
  EXPECT_EQ(rule(g.gbnf, "a-first"), "( a-kv b-next | b-first )");
  EXPECT_EQ(rule(g.gbnf, "b-first"), "b-kv c-next");
  EXPECT_EQ(rule(g.gbnf, "b-next"), R"("," b-kv c-next)");
  EXPECT_EQ(rule(g.gbnf, "c-next"), R"(( "," c-kv )?)");
}

TEST(JsonSchemaGbnf, StrictTurnsWarningsIntoErrors) {
  SchemaOptions o;
  o.strict = true;
  try {
    json_schema_text_to_gbnf(R"({"type":"object","properties":{"l":{"type":"array","uniqueItems":true}}})", o);
    FAIL() << "no error";
  } catch (const GrammarError& e) {
    EXPECT_STREQ(e.what(), "/properties/l: unsupported keyword 'uniqueItems'");
  }
  EXPECT_NO_THROW(json_schema_text_to_gbnf(R"({"type":"string","title":"t","x-vendor":1})", o));
}

TEST(JsonSchemaGbnf, EmptySchemaIsAnObjectAndUntypedIsAnyValue) {
  EXPECT_EQ(rule(convert("{}").gbnf, "root"), "object");
  EXPECT_EQ(rule(convert(R"({"type":"object"})").gbnf, "root"), "object");
  EXPECT_EQ(rule(convert(R"({"description":"anything"})").gbnf, "root"), "value");
  EXPECT_EQ(rule(convert(R"({"type":"object","additionalProperties":false})").gbnf, "root"), R"("{" space "}" space)");
}

TEST(JsonSchemaGbnf, JsonObjectGrammar) {
  const std::string g = json_object_gbnf();
  EXPECT_EQ(g.rfind("root ::= object\n", 0), 0u);
  EXPECT_EQ(rule(g, "value"), "object | array | string | number | boolean | null");
  EXPECT_EQ(json_object_gbnf({JsonWhitespace::Compact}).find("space"), std::string::npos);
}

TEST(JsonSchemaGbnf, EnumConstAndTypeArrays) {
  EXPECT_EQ(rule(convert(R"({"enum":["a",1,null,{"x":[1,2]}]})").gbnf, "root"),
            R"(("\"a\"" | "1" | "null" | "{\"x\":[1,2]}") space)");
  // enum values of another type than `type` cannot match.
  EXPECT_EQ(rule(convert(R"({"type":"string","enum":["a",1]})").gbnf, "root"), R"(("\"a\"") space)");
  EXPECT_EQ(rule(convert(R"({"type":["string","null"]})").gbnf, "root"), "string | null");
}

TEST(JsonSchemaGbnf, ArraysAndStrings) {
  EXPECT_EQ(rule(convert(R"({"type":"array","items":{"type":"number"},"minItems":1,"maxItems":3})").gbnf, "root"),
            R"("[" space number ("," space number){0,2} "]" space)");
  EXPECT_EQ(rule(convert(R"({"type":"array","items":{"type":"number"}})").gbnf, "root"),
            R"("[" space (number ("," space number)*)? "]" space)");
  EXPECT_EQ(rule(convert(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})").gbnf, "root"),
            R"("[" space string "," space integer "]" space)");
  EXPECT_EQ(rule(convert(R"({"type":"string","minLength":2,"maxLength":5})").gbnf, "root"),
            R"("\"" code-point{2,5} "\"" space)");
  EXPECT_EQ(rule(convert(R"({"type":"string","format":"date"})").gbnf, "root"), "date-string");
  EXPECT_EQ(rule(convert(R"({"type":"string","format":"uuid"})").gbnf, "root"), "uuid");
}

TEST(JsonSchemaGbnf, RecursiveRefsBecomeRecursiveRules) {
  const auto g = convert(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_EQ(rule(g.gbnf, "root"), "node");
  EXPECT_EQ(rule(g.gbnf, "node-next"), "node | null");
  EXPECT_EQ(rule(g.gbnf, "node"), R"("{" space node-v-kv ( "," space ( node-next-kv ) )? "}" space)");
  // "#" is the root itself.
  const auto r = convert(R"({"type":"array","items":{"$ref":"#"}})");
  EXPECT_EQ(rule(r.gbnf, "root"), R"("[" space (root ("," space root)*)? "]" space)");
}

TEST(JsonSchemaGbnf, AllOfMergesPropertiesAndRequired) {
  const auto g = convert(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"string"}}}]})");
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" space a-kv ( "," space ( b-kv ) )? "}" space)");
}

TEST(JsonSchemaGbnf, AnyOfSiblingsApplyToEveryAlternative) {
  const auto g = convert(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "anyOf":[{"required":["a"]},{"required":["b"]}]})");
  EXPECT_EQ(rule(g.gbnf, "root"), "alternative-0 | alternative-1");
  EXPECT_EQ(rule(g.gbnf, "alternative-0"),
            R"("{" space alternative-0-a-kv ( "," space ( alternative-0-b-kv ) )? "}" space)");
  EXPECT_EQ(rule(g.gbnf, "alternative-1"),
            R"("{" space alternative-1-b-kv ( "," space ( alternative-1-a-kv ) )? "}" space)");
  // An alternative that cannot match beside its siblings is left out.
  const auto one = convert(R"({"type":"string","anyOf":[{"type":"integer"},{"maxLength":1}]})");
  EXPECT_EQ(rule(one.gbnf, "root"), "alternative-1");
  EXPECT_EQ(rule(one.gbnf, "alternative-1"), R"("\"" code-point? "\"" space)");
  EXPECT_NE(error_of(R"({"type":"string","anyOf":[{"type":"integer"}]})").find("no alternative can match"),
            std::string::npos);
}

TEST(JsonSchemaGbnf, RequiredWithoutPropertyIsStillRequired) {
  const auto g = convert(R"({"type":"object","required":["x"]})");
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" space x-kv "}" space)");
  EXPECT_EQ(rule(g.gbnf, "x-kv"), R"("\"x\"" space ":" space value)");
}

TEST(JsonSchemaGbnf, AdditionalPropertiesExcludeDeclaredNames) {
  const auto g = convert(R"({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}})");
  EXPECT_EQ(rule(g.gbnf, "root"),
            R"("{" space ( a-kv a-rest | additional-kv ( "," space additional-kv )* )? "}" space)");
  EXPECT_EQ(rule(g.gbnf, "additional-kv"), R"(additional-k ":" space integer)");
  EXPECT_NE(rule(g.gbnf, "additional-k").find(R"([^"\\\x7F\x00-\x1Fa])"), std::string::npos);
}

TEST(JsonSchemaGbnf, RuleNamesAreValidAndDeduplicated) {
  const auto g = convert(R"({"type":"object","properties":{"my key!":{"type":"integer","minimum":1},
      "string":{"type":"integer","minimum":2},"root":{"type":"integer","minimum":3}},"required":["my key!","string","root"]})");
  EXPECT_EQ(rule(g.gbnf, "root"), R"("{" space my-key-kv "," space string-kv "," space root-kv "}" space)");
  EXPECT_EQ(rule(g.gbnf, "string-kv"), R"("\"string\"" space ":" space string-)");
  EXPECT_NE(rule(g.gbnf, "string-"), "");  // a property named like a primitive does not shadow it
  EXPECT_NE(rule(g.gbnf, "root1"), "");
  for (size_t at = 0; at < g.gbnf.size();) {
    const size_t end = g.gbnf.find(" ::= ", at);
    ASSERT_NE(end, std::string::npos);
    for (size_t i = at; i < end; ++i) {
      const char c = g.gbnf[i];
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-') << g.gbnf.substr(at, end - at);
    }
    at = g.gbnf.find('\n', end) + 1;
  }
}

TEST(JsonSchemaGbnf, IntegerRanges) {
  EXPECT_EQ(integer_range_gbnf(0, std::nullopt), "([0-9] | [1-9] [0-9]{1,15})");
  EXPECT_EQ(integer_range_gbnf(1, 12), "([1-9] | [1] [0-2])");
  EXPECT_EQ(integer_range_gbnf(-5, 119), R"(("-" [1-5] | [0-9] | [1-9] [0-9] | [1] [0-1] [0-9]))");
  EXPECT_EQ(integer_range_gbnf(7, 7), R"("7")");
  EXPECT_EQ(integer_range_gbnf(std::nullopt, -3), R"("-" ([3-9] | [1-9] [0-9]{1,15}))");
  EXPECT_THROW(integer_range_gbnf(5, 4), GrammarError);
  EXPECT_EQ(rule(convert(R"({"type":"integer","exclusiveMinimum":0,"maximum":9.5})").gbnf, "root"), "[1-9] space");
  // Numbers: no exponent; whole integral parts, and the fraction where it stays in range.
  EXPECT_EQ(rule(convert(R"({"type":"number","exclusiveMinimum":0,"maximum":1})").gbnf, "root"),
            R"(("1" ("." [0]{1,16})? | "0" "." [0-9]{0,15} [1-9] [0-9]{0,15}) space)");
  EXPECT_THROW(number_range_gbnf(NumberBound{2, true}, NumberBound{2, false}), GrammarError);
}

TEST(JsonSchemaGbnf, PatternsAreJsonEncoded) {
  EXPECT_EQ(pattern_to_gbnf("^[a-z]+\\d{2,3}(x|y)?$", "char"), "([a-z])+ ([0-9]){2,3} (([x] | [y]))?");
  EXPECT_EQ(pattern_to_gbnf("^a\"b$", "char"), R"([a] "\\\"" [b])");  // a quote is \" in the JSON text
  EXPECT_EQ(pattern_to_gbnf("ab", "char"), "char* [a] [b] char*");   // unanchored: search semantics
  EXPECT_EQ(pattern_to_gbnf("^$", "char"), "");
  EXPECT_EQ(pattern_to_gbnf("^[^-]$", "char").rfind("([ !#-,.-\\[", 0), 0u);
  // Control characters are written \u00XX (lowercase), grouped.
  EXPECT_EQ(pattern_to_gbnf("^[\\x01\\x1f]$", "char"), R"("\\u00" ("0" "1" | "1" "f"))");
  EXPECT_THROW(pattern_to_gbnf("^(?=a)$", "char"), GrammarError);
  EXPECT_THROW(pattern_to_gbnf("^(a)\\1$", "char"), GrammarError);
  EXPECT_THROW(pattern_to_gbnf("^a{3000}$", "char"), GrammarError);
  EXPECT_EQ(rule(convert(R"({"type":"string","pattern":"^ab$"})").gbnf, "root"), R"("\"" [a] [b] "\"" space)");
}

TEST(JsonSchemaGbnf, UnsupportedKeywordsAreWarnings) {
  const auto g = convert(R"({"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":true},
      "l":{"type":"array","uniqueItems":true,"contains":{"type":"integer"}}},"minProperties":1,
      "title":"t","$comment":"c","examples":[{}]})");
  const std::vector<std::string> want = {"/: unsupported keyword 'minProperties' (ignored)",
                                         "/properties/n: unsupported keyword 'exclusiveMinimum' (ignored)",
                                         "/properties/l: unsupported keyword 'uniqueItems' (ignored)",
                                         "/properties/l: unsupported keyword 'contains' (ignored)"};
  EXPECT_EQ(g.warnings, want);
  const auto n = convert(R"({"not":{"type":"string"},"if":{},"then":{},"else":{},"multipleOf":2})");
  EXPECT_EQ(n.warnings.size(), 5u);
}

TEST(JsonSchemaGbnf, ErrorsNamePathAndKeyword) {
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"index":{"type":"hiccup"}}})"),
            "/properties/index/type: unknown type 'hiccup'");
  EXPECT_EQ(error_of("123"), "/: a schema must be a JSON object, got number");
  EXPECT_EQ(error_of(R"({"type":123})"), "/type: type must be a string or an array of strings");
  EXPECT_EQ(error_of(R"({"$ref":"https://example.com/s.json"})"),
            "/$ref: unsupported reference 'https://example.com/s.json' (only local references '#/...' are supported)");
  EXPECT_EQ(error_of(R"({"$ref":"#/$defs/missing"})"), "/$ref: unresolvable reference '#/$defs/missing'");
  EXPECT_NE(error_of(R"({"type":"string","pattern":"^(?<n>a)$"})").find("/pattern: pattern: lookaround"), std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":5,"maximum":4})").rfind("/: no integer satisfies", 0), 0u);
}

TEST(JsonSchemaGbnf, MaliciousSchemasAreBounded) {
  // A huge maxItems is not enforced (GBNF's repetition limit), with a warning; a huge minItems
  // is an error rather than a grammar nobody can compile.
  const auto g = convert(R"({"type":"array","items":{"type":"integer"},"maxItems":100000})");
  EXPECT_EQ(g.warnings, std::vector<std::string>{"/: maxItems above 2000 not enforced (ignored)"});
  EXPECT_NE(error_of(R"({"type":"array","minItems":100000})").find("minItems above 2000"), std::string::npos);
  std::string deep = R"({"type":"integer"})";
  for (int i = 0; i < 200; ++i) deep = R"({"type":"object","properties":{"a":)" + deep + R"(},"required":["a"]})";
  EXPECT_NE(error_of(deep.c_str()).find("nested deeper than 64"), std::string::npos);
  // Unions of unions of allOf distribute multiplicatively: bounded by the visit count.
  std::string wide = R"({"allOf":[)";
  for (int i = 0; i < 20; ++i) wide += std::string(i ? "," : "") + R"({"anyOf":[{"minimum":1},{"maximum":9}]})";
  wide += "]}";
  EXPECT_NE(error_of(wide.c_str()).find("too complex"), std::string::npos);
}

}  // namespace
}  // namespace tandem::grammar
