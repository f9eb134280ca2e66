#include "http/api/request_log.h"

#include <chrono>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "http/api/response_json.h"

namespace tandem::http {

Json request_record(const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id) {
  Json j = Json::object();
  j["id"] = id;
  j["unix_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  j["slot"] = r.slot;
  j["finish"] = std::string(serve::to_string(r.reason));
  if (!r.error.empty()) j["error"] = r.error;
  j["started"] = r.started;
  j["n_predict"] = req.params.n_predict;
  j["prompt"] = req.prompt;
  j["user_starts"] = req.user_starts;
  if (!req.images.empty()) {  // the image chunks (their rows hold placeholders in "prompt")
    Json images = Json::array();
    for (const serve::RequestImage& im : req.images)
      images.push_back(Json{{"begin", im.chunk.begin}, {"nx", im.chunk.nx}, {"ny", im.chunk.ny}, {"id", im.chunk.id}});
    j["images"] = std::move(images);
  }
  j["output"] = r.output;
  if (!r.fed_past_output.empty()) j["fed_past_output"] = r.fed_past_output;
  j["timings"] = timings_json(r);
  return j;
}

RequestLog::RequestLog(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {
  if (!f_) throw std::runtime_error("--log-requests: cannot open '" + path + "': " + std::strerror(errno));
}

RequestLog::~RequestLog() {
  if (f_) std::fclose(f_);
}

void RequestLog::write(const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id) {
  const std::string line = to_text(request_record(req, r, id)) + "\n";
  std::lock_guard lk(mu_);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace tandem::http
