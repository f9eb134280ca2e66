#include "http/transport/auth.h"

namespace tandem::http {

namespace {
bool equal_ct(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b.empty() ? 0 : b[i % b.size()]);
  return diff == 0;
}
}  // namespace

bool authorized(std::string_view key, std::string_view authorization, std::string_view x_api_key) {
  if (key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() > kBearer.size() && authorization.substr(0, kBearer.size()) == kBearer &&
      equal_ct(authorization.substr(kBearer.size()), key))
    return true;
  return !x_api_key.empty() && equal_ct(x_api_key, key);
}

bool is_public_path(std::string_view path) { return path == "/health" || path == "/v1/health"; }

}  // namespace tandem::http
