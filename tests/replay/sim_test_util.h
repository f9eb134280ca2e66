// For the replay-model tests against a real server: serves request bodies through tandem-server's
// HTTP front and engine on the tiny model, one at a time, and reads back the server's own
// --log-requests log (the lines tandem-sim --check compares with its prediction).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "http/api/request_log.h"
#include "http/routes/http_test_util.h"
#include "http/routes/server.h"
#include "serve/engine/engine.h"

namespace tandem::agent::testing {

// with_vision: the engine gets the tiny random mmproj (http::testing::TinyModel::vision()).
inline void serve_and_log(const serve::EngineConfig& cfg, const std::vector<nlohmann::ordered_json>& bodies,
                          const std::string& log_path, std::vector<nlohmann::ordered_json>& log,
                          bool with_vision = false) {
  auto& tm = http::testing::TinyModel::get();
  std::remove(log_path.c_str());
  {
    serve::Engine engine(*tm.model, *tm.tok, cfg, with_vision ? tm.vision() : nullptr);
    http::RequestLog request_log(log_path);
    engine.set_finish_hook([&request_log](const serve::EngineRequest& req, const serve::GenerationResult& r,
                                          uint64_t id) { request_log.write(req, r, id); });
    http::HttpServer server(engine, tm.tmpl, http::HttpServerConfig{});
    const int port = server.start();
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(300, 0);
    for (const auto& b : bodies) {
      const auto res = cli.Post("/v1/chat/completions", b.dump(), "application/json");
      ASSERT_TRUE(res) << "no response";
      ASSERT_EQ(res->status, 200) << res->body;
    }
    server.stop();
  }
  std::ifstream in(log_path);
  std::string line;
  log.clear();
  while (std::getline(in, line)) log.push_back(nlohmann::ordered_json::parse(line));
  std::remove(log_path.c_str());
  ASSERT_EQ(log.size(), bodies.size());
}

}  // namespace tandem::agent::testing
