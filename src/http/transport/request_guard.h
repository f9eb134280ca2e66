// Who may send a request (issue 51: "any web page can reach it"), checked on the framed request
// before routing and before the API key:
//   - Host: a browser on the same device follows a DNS name an attacker controls to 127.0.0.1
//     (DNS rebinding) and sends that name as Host. Accepted: no Host (HTTP/1.0), "localhost", an IP
//     address literal, the address the server is bound to, and the --allow-host names; "*" accepts
//     any. Otherwise 403.
//   - Origin: a page may POST to 127.0.0.1 without a preflight; browsers always say where such a
//     request comes from. A POST whose Origin is not the Host it is sent to (scheme aside) is
//     refused (403) unless --allow-host '*'. Clients that are not browsers send no Origin.
//   - Content-Type: a page's "simple" POST can only carry text/plain, form or multipart bodies.
//     Every POST route reads JSON, so a POST with a body (or with any Content-Type) must say
//     application/json (415); a bodiless POST without one (curl -X POST .../slots/0?action=erase)
//     is accepted.
// Requests over the Unix socket (--socket) come from processes of this device that may open it,
// never from a browser: only the Content-Type rule applies to them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "http/api/api_error.h"
#include "http/transport/request_framing.h"

namespace tandem::http {

struct RequestGuardConfig {
  std::string bound_host;                  // --host
  std::vector<std::string> allowed_hosts;  // --allow-host (host names, without ports); "*": any
};

// The refusal for this request, or none. unix_socket: it came over --socket.
std::optional<ApiError> check_request(const FramedRequest& req, const RequestGuardConfig& cfg, bool unix_socket);

// The host part of a Host header or of an Origin's authority, lower-cased, without the port;
// IPv6 literals keep their brackets ("[::1]"). Empty when malformed.
std::string host_name_of(std::string_view authority);

}  // namespace tandem::http
