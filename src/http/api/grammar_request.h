// The constrained-decoding fields of a generation request (spec/constrained.md §3) -> GBNF text:
//   /completion:           "grammar" (GBNF; "" = none), "json_schema" (used only when "grammar"
//                          is absent or empty, as llama.cpp does)
//   /v1/chat/completions:  "response_format" {"type": "text" | "json_object" (optionally with
//                          "schema") | "json_schema" with "json_schema": {"name", "schema",
//                          "strict"}}, and the llama.cpp extensions "grammar" / "json_schema"
//                          (both at once: 400; a grammar with tools: 400)
//   both:                  "tandem": {"json_whitespace": "flexible" | "compact"} (a Tandem
//                          extension: compact JSON leaves no whitespace choice, so keys and
//                          punctuation are forced text and become free drafts)
// Differences from llama.cpp, on purpose: {"type": "json_object"} constrains the answer to a JSON
// object (llama.cpp's default chat path leaves it unconstrained), and conflicts are 400, not 500.
#pragma once

#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "http/api/json_text.h"
#include "serve/request/request.h"

namespace tandem::http {

// Throws ApiError (400) naming the field for a wrong shape or a schema that cannot be converted.
serve::GrammarRequest parse_grammar_request(const Json& body, bool chat, grammar::JsonWhitespace default_whitespace);

// The request's JSON whitespace: "tandem.json_whitespace", else the server's default. 400 for a
// wrong value.
grammar::JsonWhitespace request_json_whitespace(const Json& body, grammar::JsonWhitespace default_whitespace);

}  // namespace tandem::http
