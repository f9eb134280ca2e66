// A request the front end refuses (over HTTP a 400 invalid_request_error, http/api/error_map.cpp),
// naming the field that was wrong ("messages", "image_max_tokens", "prompt"; empty: the whole
// request). Thrown while a request is read (json_fields.h, chat_prompt.h) and assembled
// (prompt_assembly.h); an std::invalid_argument, so callers that only need the message (the dry
// run, tools) catch that.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tandem::serve {

class RequestError : public std::invalid_argument {
 public:
  explicit RequestError(const std::string& message, std::string field = {})
      : std::invalid_argument(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

}  // namespace tandem::serve
