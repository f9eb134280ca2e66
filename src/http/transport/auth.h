// --api-key: every endpoint but /health wants "Authorization: Bearer <key>" (or llama.cpp's
// "X-Api-Key: <key>").
#pragma once

#include <string>
#include <string_view>

namespace tandem::http {

// True when no key is configured, or one of the headers carries it. Compares in constant time.
bool authorized(std::string_view configured_key, std::string_view authorization_header, std::string_view x_api_key_header);

// Whether a path is open without a key.
bool is_public_path(std::string_view path);

}  // namespace tandem::http
