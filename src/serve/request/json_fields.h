// Typed, range-checked access to request fields, for every front end that reads a request's JSON
// (http/api/, the dry run through chat_prompt.h). Every failure is a RequestError (a 400 over HTTP)
// naming the field and what was expected; a missing field or JSON null is "not given".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::serve {

// Keys keep their insertion order (http/api/json_text.h's Json, text::Json: the same type).
using Json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;

// The request body: a JSON object (refused for invalid JSON, invalid UTF-8, another JSON type, or
// nesting deeper than kMaxJsonDepth).
Json parse_json_object(const std::string& body);

std::optional<bool> opt_bool(const Json& obj, const char* key);
std::optional<int64_t> opt_int(const Json& obj, const char* key, int64_t lo, int64_t hi);
std::optional<double> opt_number(const Json& obj, const char* key, double lo, double hi);
std::optional<std::string> opt_string(const Json& obj, const char* key);
// A string or an array of strings ("stop"): at most max_items, none empty.
std::vector<std::string> opt_string_list(const Json& obj, const char* key, size_t max_items);

}  // namespace tandem::serve
