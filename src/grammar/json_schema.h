// JSON Schema -> GBNF with llama.cpp's semantics (common/json-schema-to-grammar.cpp,
// spec/constrained.md §2.2): required properties first in declaration order, then optional ones;
// additionalProperties false unless the schema says otherwise; SPACE_RULE whitespace after
// punctuation; integral parts capped at 16 digits; `{}` is any object. Keywords the converter does
// not support are reported as warnings (the server returns them with the response), never
// silently dropped. `compact` whitespace (a Tandem extension) allows no whitespace at all, so
// that punctuation and keys are forced text (forced drafts in speculation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {

enum class JsonWhitespace : uint8_t {
  Flexible,  // llama.cpp's SPACE_RULE: "" | " " | "\n"{1,2} [ \t]{0,20}
  Compact,   // none (the agent's answers are compact JSON)
};

enum class PropertyOrder : uint8_t {
  RequiredFirst,  // llama.cpp: required properties first (declaration order), then optional ones
  Declaration,    // the schema's order, optional ones skippable in place (XGrammar, llguidance)
};

struct SchemaOptions {
  JsonWhitespace whitespace = JsonWhitespace::Flexible;
  PropertyOrder order = PropertyOrder::RequiredFirst;
  // Every warning (an unsupported keyword, a format or bound not enforced) is a GrammarError
  // instead, as llguidance does for `strict` schemas.
  bool strict = false;
  // Bounds for malicious or runaway schemas (GrammarError when exceeded): subschema nesting,
  // subschema visits (allOf / anyOf distribution and $ref inlining multiply them), rules and
  // GBNF bytes (GrammarLimits::max_source_bytes, so that the parser takes what we print).
  int max_depth = 64;
  size_t max_visits = 20000;
  size_t max_rules = 10000;
  size_t max_gbnf_bytes = 1 << 20;
};

struct SchemaGrammar {
  std::string gbnf;                   // starts with a `root` rule
  std::vector<std::string> warnings;  // unsupported keywords, each with its JSON pointer path
};

// Throws GrammarError naming the keyword and its path (e.g. "/properties/index/type: unknown
// type 'hiccup'") for a schema that cannot be converted.
// nlohmann::json keeps object keys sorted, so properties come in alphabetical order; pass an
// ordered_json (or the schema text) to keep declaration order, which llama.cpp follows.
SchemaGrammar json_schema_to_gbnf(const nlohmann::json& schema, const SchemaOptions& opt = {});
SchemaGrammar json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaOptions& opt = {});
// Parses `schema_text` as JSON (GrammarError when it is not) keeping declaration order.
SchemaGrammar json_schema_text_to_gbnf(std::string_view schema_text, const SchemaOptions& opt = {});

// Any JSON value whose top level is an object (response_format {"type": "json_object"}).
std::string json_object_gbnf(const SchemaOptions& opt = {});

}  // namespace tandem::grammar
