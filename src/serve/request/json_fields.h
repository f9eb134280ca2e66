// Typed, range-checked access to request fields. Every failure is a 400 (ApiError) naming the
// field and what was expected; a missing field or JSON null is "not given".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "http/api/json_text.h"

namespace tandem::http {

constexpr int kMaxJsonDepth = 64;

// The request body: a JSON object (400 for invalid JSON, invalid UTF-8, another JSON type, or
// nesting deeper than kMaxJsonDepth).
Json parse_json_object(const std::string& body);

std::optional<bool> opt_bool(const Json& obj, const char* key);
std::optional<int64_t> opt_int(const Json& obj, const char* key, int64_t lo, int64_t hi);
std::optional<double> opt_number(const Json& obj, const char* key, double lo, double hi);
std::optional<std::string> opt_string(const Json& obj, const char* key);
// A string or an array of strings ("stop"): at most max_items, none empty.
std::vector<std::string> opt_string_list(const Json& obj, const char* key, size_t max_items);

}  // namespace tandem::http
