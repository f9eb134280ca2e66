// --log-requests FILE: one JSON line per finished request (any outcome) with the prompt and
// output token ids, the user-message starts and every serving.md §5 number, so that a replay
// can be checked request by request. "output" holds every sampled token; the first
// timings.tokens_generated of them were fed back to the model (the last sampled one never is).
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

#include "http/api/json_text.h"
#include "serve/engine/engine.h"

namespace tandem::http {

Json request_record(const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id);

class RequestLog {
 public:
  // Opens for appending; throws std::runtime_error when it cannot.
  explicit RequestLog(const std::string& path);
  ~RequestLog();
  RequestLog(const RequestLog&) = delete;
  RequestLog& operator=(const RequestLog&) = delete;

  void write(const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id);

 private:
  std::mutex mu_;
  std::FILE* f_ = nullptr;
};

}  // namespace tandem::http
