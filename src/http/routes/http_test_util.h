// Helpers for the HTTP tests: an in-process server on a free loopback port over the tiny
// generated model (model/test_support.h), a raw socket client (to hang up mid-request), SSE parsing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/api/json_text.h"
#include "http/api/request_log.h"
#include "http/routes/server.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_support.h"
#include "serve/engine/engine.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vision/vision_model.h"

namespace tandem::http::testing {

// The tiny model and the polling wait every suite shares (model/test_support.h).
using test_support::TinyModel;
using test_support::wait_until;

inline serve::EngineConfig small_engine(int parallel = 1, int queue = 8, int64_t n_ctx = 1024) {
  serve::EngineConfig c;
  c.n_parallel = parallel;
  c.queue_max = queue;
  c.n_ctx = n_ctx;
  c.slot.ctx_checkpoints = 8;
  c.slot.batch = serve::BatchConfig{2048, 512, true};
  c.cache_ram_mib = 64;
  return c;
}

// Engine + HttpServer on 127.0.0.1:<free port>. Every finished request's record (the
// --log-requests line) is kept in `records`.
struct TestServer {
  std::unique_ptr<serve::Engine> engine;
  std::unique_ptr<HttpServer> server;
  int port = 0;
  std::mutex mu;
  std::vector<Json> records;

  explicit TestServer(serve::EngineConfig cfg, std::string api_key = {}, bool with_vision = false) {
    TinyModel& m = TinyModel::get();
    start(*m.model, *m.tok, m.tmpl, std::move(cfg), std::move(api_key), with_vision ? m.vision() : nullptr);
  }
  // The HTTP side configured by the test (limits, timeouts, allowed hosts, a Unix socket).
  TestServer(serve::EngineConfig cfg, const std::function<void(HttpServerConfig&)>& configure) {
    TinyModel& m = TinyModel::get();
    start(*m.model, *m.tok, m.tmpl, std::move(cfg), {}, nullptr, configure);
  }
  // Another model (the other hybrids' tests): the caller keeps model, tokenizer and template alive.
  TestServer(HybridModel& model, const text::Tokenizer& tok, const text::ChatTemplate& tmpl, serve::EngineConfig cfg) {
    start(model, tok, tmpl, std::move(cfg), {}, nullptr);
  }
  void start(HybridModel& model, const text::Tokenizer& tok, const text::ChatTemplate& tmpl, serve::EngineConfig cfg,
             std::string api_key, vision::VisionModel* vision,
             const std::function<void(HttpServerConfig&)>& configure = {}) {
    engine = std::make_unique<serve::Engine>(model, tok, cfg, vision);
    engine->set_finish_hook([this](const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id) {
      std::lock_guard lk(mu);
      records.push_back(request_record(req, r, id));
    });
    HttpServerConfig hc;
    hc.host = "127.0.0.1";
    hc.port = 0;
    hc.api_key = std::move(api_key);
    hc.model_names = {"tiny", "qwen35-tiny"};
    if (configure) configure(hc);
    server = std::make_unique<HttpServer>(*engine, tmpl, hc);
    port = server->start();
  }
  ~TestServer() {
    server->stop();
    server.reset();
    engine.reset();
  }
  std::unique_ptr<httplib::Client> client(int timeout_s = 120) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
    c->set_connection_timeout(5);
    c->set_read_timeout(timeout_s);
    c->set_write_timeout(10);
    return c;
  }
  std::vector<Json> take_records() {
    std::lock_guard lk(mu);
    return records;
  }
};

inline bool all_slots_idle(const serve::Engine& e) {
  const auto s = e.snapshot();
  for (const auto& sl : s.slots)
    if (sl.phase != serve::SlotPhase::Idle) return false;
  return s.queued == 0;
}

// A plain TCP client: sends one request and reads what arrives, so that a test can hang up in
// the middle of a response.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
  }
  ~RawClient() { close(); }
  bool ok() const { return fd_ >= 0; }
  bool post(const std::string& path, const std::string& body) {
    return send_raw("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  }
  // Sends bytes as they are (framing tests).
  bool send_raw(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes or `timeout` passes; true when it closed.
  bool read_to_close(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const int r = receive(end);
      if (r <= 0) return r == 0;
    }
  }
  // Reads until `needle` has arrived (true) or timeout / end of stream (false).
  bool read_until(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle) == std::string::npos)
      if (receive(end) <= 0) return false;
    return true;
  }
  const std::string& received() const { return received_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  // Waits for bytes until `end` and appends them: 1 when some arrived, 0 when the peer closed, -1
  // at the deadline.
  int receive(std::chrono::steady_clock::time_point end) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return -1;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return 0;
      received_.append(buf, static_cast<size_t>(n));
      return 1;
    }
  }

  int fd_ = -1;
  std::string received_;
};

// "data: ..." events of an SSE body; "[DONE]" is kept as the string "[DONE]".
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

// A POST of a JSON body, the response as it came (or the transport error).
inline httplib::Result post_json(TestServer& s, const std::string& path, const Json& body) {
  return s.client()->Post(path, to_text(body), "application/json");
}

// A response's body as JSON (a failed test and null when there was no response).
inline Json parse_body(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no response";
  if (!r) return Json();
  return Json::parse(r->body);
}

// A chat completion streamed: choices[0] of every chunk that has one, in order.
inline std::vector<Json> streamed_choices(TestServer& s, Json body) {
  body["stream"] = true;
  auto r = post_json(s, "/v1/chat/completions", body);
  std::vector<Json> out;
  EXPECT_TRUE(r) << "no response";
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  for (const std::string& data : sse_data(r->body)) {
    if (data == "[DONE]") continue;
    Json ev = Json::parse(data);
    if (ev.contains("choices") && !ev["choices"].empty()) out.push_back(std::move(ev["choices"][0]));
  }
  return out;
}

}  // namespace tandem::http::testing
