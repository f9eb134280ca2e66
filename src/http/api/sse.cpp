#include "http/api/sse.h"

#include "http/api/api_error.h"

namespace tandem::http {

std::string sse_event(const Json& j) { return "data: " + to_text(j) + "\n\n"; }
std::string sse_done() { return "data: [DONE]\n\n"; }
std::string sse_error(int status, const std::string& type, const std::string& message) {
  return sse_event(error_body(status, type, message));
}

}  // namespace tandem::http
