// JSON Schema's type names on a JSON value, shared by the tool-call parser (tool_calls.h) and the
// grammar's schema converter (grammar/json_schema.cpp).
#pragma once

#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tandem::text {

// Whether v has the JSON Schema type `type`: an integral number is both "integer" and "number";
// a name JSON Schema does not have matches nothing.
inline bool json_has_type(const nlohmann::ordered_json& v, std::string_view type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

}  // namespace tandem::text
