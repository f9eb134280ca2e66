// Server-sent events as OpenAI and llama.cpp stream them: one "data: <json>\n\n" per event, and
// for the OpenAI endpoint a final "data: [DONE]\n\n".
#pragma once

#include <string>

#include "http/api/json_text.h"

namespace tandem::http {

std::string sse_event(const Json& j);
std::string sse_done();
// An error inside a stream (headers are already sent): data: {"error": {...}}
std::string sse_error(int status, const std::string& type, const std::string& message);

}  // namespace tandem::http
