#include "http/transport/request_guard.h"

#include <arpa/inet.h>

#include <algorithm>

namespace tandem::http {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), buf) == 1;
  return inet_pton(AF_INET, host.c_str(), buf) == 1;
}

// "scheme://authority" -> authority (Origin has no path); empty when malformed.
std::string origin_authority(std::string_view origin) {
  const size_t sep = origin.find("://");
  if (sep == std::string_view::npos) return {};
  return lower(origin.substr(sep + 3));
}

// The authority with the scheme's default port made explicit, for comparing an Origin with Host.
std::string with_port(const std::string& authority, const std::string& scheme) {
  const std::string host = host_name_of(authority);
  if (host.empty()) return {};
  if (authority.size() > host.size()) return authority;  // has ":port"
  return authority + (scheme == "https" ? ":443" : ":80");
}

}  // namespace

std::string host_name_of(std::string_view authority) {
  std::string a = lower(authority);
  if (a.empty()) return {};
  if (a.front() == '[') {
    const size_t close = a.find(']');
    if (close == std::string::npos) return {};
    const std::string rest = a.substr(close + 1);
    if (!rest.empty() && (rest[0] != ':' || rest.size() == 1 ||
                          !std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; })))
      return {};
    return a.substr(0, close + 1);
  }
  const size_t colon = a.find(':');
  std::string host = a.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = a.substr(colon + 1);
    if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return {};
  }
  if (host.empty()) return {};
  for (const char c : host)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_')) return {};
  return host;
}

std::optional<ApiError> check_request(const FramedRequest& req, const RequestGuardConfig& cfg, bool unix_socket) {
  const bool any_host = std::find(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(), "*") != cfg.allowed_hosts.end();
  if (!unix_socket && !any_host) {
    if (req.header_count("Host") > 0) {
      const std::string_view host_header = req.header("Host");
      const std::string host = host_name_of(host_header);
      const std::string bound = lower(cfg.bound_host);
      const bool ok = !host.empty() && (host == "localhost" || is_ip_literal(host) || host == bound ||
                                        host == "[" + bound + "]" ||
                                        std::any_of(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(),
                                                    [&](const std::string& h) { return lower(h) == host; }));
      if (!ok)
        return ApiError(403, "invalid_request_error",
                        "Host '" + std::string(host_header.substr(0, 100)) +
                            "' is not served here: requests must name localhost, an IP address or an --allow-host "
                            "name (a DNS name that leads here may be a rebinding attack)");
    }
    if (req.method == "POST" && req.header_count("Origin") > 0) {
      const std::string_view origin = req.header("Origin");
      const std::string scheme = lower(origin.substr(0, origin.find("://")));
      const std::string from = origin_authority(origin);
      const std::string to = lower(req.header("Host"));
      if (from.empty() || to.empty() || with_port(from, scheme) != with_port(to, "http"))
        return ApiError(403, "invalid_request_error",
                        "cross-origin request from Origin '" + std::string(origin.substr(0, 100)) +
                            "' refused (a web page may not drive this server; --allow-host '*' allows it)");
    }
  }
  if (req.method == "POST" && (!req.body.empty() || req.header_count("Content-Type") > 0)) {
    const std::string_view ct = req.header("Content-Type");
    std::string media = lower(ct.substr(0, ct.find(';')));
    while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
    if (media != "application/json")
      return ApiError(415, "invalid_request_error",
                      ct.empty() ? std::string("missing Content-Type: the body must be JSON sent as application/json")
                                 : "Content-Type '" + std::string(ct.substr(0, 100)) +
                                       "' is not accepted: the body must be JSON sent as application/json");
  }
  return std::nullopt;
}

}  // namespace tandem::http
