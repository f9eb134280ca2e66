// The JSON type of the HTTP layer and its serialization. Keys keep their insertion order (as the
// chat template's tojson needs, and so responses read id, object, created, ... like OpenAI's).
// Generated text can hold broken UTF-8 (a model may emit half a character before it stops), so
// dumping replaces invalid bytes with U+FFFD instead of throwing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tandem::http {

using Json = nlohmann::ordered_json;

inline std::string to_text(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace tandem::http
