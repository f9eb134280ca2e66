// Errors a handler answers with, as HTTP status + the OpenAI error body that llama.cpp's server
// also sends: {"error": {"code": 400, "message": "...", "type": "invalid_request_error", "param": ...}}.
#pragma once

#include <stdexcept>
#include <string>

#include "http/api/json_text.h"

namespace tandem::http {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
};

// 400 invalid_request_error; `param` names the offending field when there is one.
ApiError bad_request(const std::string& message, std::string param = {});
ApiError unauthorized(const std::string& message);       // 401 authentication_error
ApiError not_found(const std::string& message);          // 404 not_found_error
ApiError unavailable(const std::string& message);        // 503 unavailable_error
ApiError server_error(const std::string& message);       // 500 server_error

Json error_body(int status, const std::string& type, const std::string& message, const std::string& param = {});
Json error_body(const ApiError& e);

}  // namespace tandem::http
