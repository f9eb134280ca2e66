// JSON Schema -> GBNF with llama.cpp's semantics (common/json-schema-to-grammar.cpp,
// spec/constrained.md §2.2): required properties first in declaration order, then optional ones;
// additionalProperties false unless the schema says otherwise; SPACE_RULE whitespace after
// punctuation; integral parts capped at 16 digits; `{}` is any object. Keywords the converter does
// not support are reported as warnings (the server returns them with the response), never
// silently dropped. `compact` whitespace (a Tandem extension) allows no whitespace at all, so
// that punctuation and keys are forced text (forced drafts in speculation).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {

enum class JsonWhitespace : uint8_t {
  Flexible,  // llama.cpp's SPACE_RULE: "" | " " | "\n"{1,2} [ \t]{0,20}
  Compact,   // none (the agent's answers are compact JSON)
};

struct SchemaOptions {
  JsonWhitespace whitespace = JsonWhitespace::Flexible;
};

struct SchemaGrammar {
  std::string gbnf;                   // starts with a `root` rule
  std::vector<std::string> warnings;  // unsupported keywords, each with its JSON pointer path
};

// Throws GrammarError naming the keyword and its path (e.g. "/properties/index/type: unknown
// type 'hiccup'") for a schema that cannot be converted.
SchemaGrammar json_schema_to_gbnf(const nlohmann::json& schema, const SchemaOptions& opt = {});

// Any JSON value whose top level is an object (response_format {"type": "json_object"}).
std::string json_object_gbnf(const SchemaOptions& opt = {});

}  // namespace tandem::grammar
