#include "http/api/api_error.h"

namespace tandem::http {

ApiError bad_request(const std::string& message, std::string param) {
  return ApiError(400, "invalid_request_error", message, std::move(param));
}
ApiError unauthorized(const std::string& message) { return ApiError(401, "authentication_error", message); }
ApiError not_found(const std::string& message) { return ApiError(404, "not_found_error", message); }
ApiError unavailable(const std::string& message) { return ApiError(503, "unavailable_error", message); }
ApiError server_error(const std::string& message) { return ApiError(500, "server_error", message); }

Json error_body(int status, const std::string& type, const std::string& message, const std::string& param) {
  Json e = Json::object();
  e["code"] = status;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json() : Json(param);
  return Json{{"error", std::move(e)}};
}

Json error_body(const ApiError& e) { return error_body(e.status(), e.type(), e.what(), e.param()); }

}  // namespace tandem::http
