// The HTTP front of an Engine: routes, authentication, error mapping, streaming. Connections are
// the transport's (http/transport/transport.h: one event loop frames requests strictly, a fixed pool of
// workers runs them); routing and writing answers are cpp-httplib's (http/transport/router.h); generation
// itself runs on the engine's scheduler thread.
//
//   HttpServer server(engine, chat_template, {.host = "127.0.0.1", .port = 0});
//   int port = server.start();   // bound and accepting when it returns
//   ...
//   server.stop();               // cancels what is in flight, joins the workers
//
// The engine must outlive the server.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// Declarations only: a tool that starts a server includes serve/engine/engine.h itself, and none of the
// engine's, the model's or the kernels' headers come in through this one.
namespace tandem::serve {
class Engine;
}  // namespace tandem::serve
namespace tandem::text {
class ChatTemplate;
}  // namespace tandem::text

#include "grammar/json_schema.h"
#include "text/reasoning.h"
#include "http/transport/request_guard.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tandem::http {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 0;                           // 0: any free port
  std::string api_key;                    // empty: no authentication
  int http_threads = 0;                   // workers; 0: parallel + queue + 8
  std::vector<std::string> model_names;   // accepted "model" values; the first is reported
  std::string model_path;                 // reported by /props
  size_t max_body_bytes = 32u << 20;
  // JSON Schema whitespace when a request does not say (http/api/grammar_request.h).
  grammar::JsonWhitespace json_whitespace = grammar::JsonWhitespace::Flexible;
  // Chat answers' reasoning when a request does not say (llama.cpp's --reasoning-format; text/reasoning.h).
  text::ReasoningFormat reasoning_format = text::ReasoningFormat::Auto;
  // What stands for an image in a /completion prompt_string (/props reports it as "media_marker").
  // Empty: $LLAMA_MEDIA_MARKER, else a random one per server (llama.cpp's way).
  std::string media_marker;
  std::string mmproj_path;  // reported by /props when the engine has a vision model
  // Connections (http/transport/transport.h) and who may send requests (http/transport/request_guard.h).
  int max_connections = 512;
  int request_timeout_ms = 10000;    // a request's head + body from its first byte
  int keep_alive_ms = 5000;          // idle time between requests on a connection
  int write_timeout_ms = 30000;      // one write of an answer
  size_t max_buffered_bytes = size_t(256) << 20;  // request bytes held across connections
  std::vector<std::string> allowed_hosts;  // Host names besides localhost and IP literals; "*": any
  std::string unix_socket;                 // non-empty: listen on this Unix socket instead of host:port
};

class Router;
class Transport;
struct FramedRequest;
class ResponseSink;
struct Peer;
struct TransportStats;

class HttpServer {
 public:
  HttpServer(serve::Engine& engine, const text::ChatTemplate& tmpl, HttpServerConfig cfg);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting on a background thread; returns the port. Throws std::runtime_error
  // when the address cannot be bound.
  int start();
  void stop();
  int port() const { return port_; }
  bool stopping() const { return stopping_.load(); }
  // The transport's counters (null before start()).
  const TransportStats* transport_stats() const;

  // Frames and serves every request in `raw` (pipelined ones included) without a socket and
  // returns what the server writes back: the fuzz target's and the framing tests' entry point.
  // Requests run one after the other on the calling thread. statuses: each answer's status.
  std::string serve_bytes(std::string_view raw, std::vector<int>* statuses = nullptr);

 private:
  void add_routes();
  // One complete request from the transport (or serve_bytes): the guard, then the router.
  bool handle(FramedRequest& req, ResponseSink& sink, const Peer& peer);
  enum class Api { OpenAiChat, LlamaCompletion };
  void generate(const httplib::Request& req, httplib::Response& res, Api api);
  void health(const httplib::Request& req, httplib::Response& res);
  void slots(const httplib::Request& req, httplib::Response& res);
  void slot_action(const httplib::Request& req, httplib::Response& res);  // routes_slots.cpp
  void metrics(const httplib::Request& req, httplib::Response& res);
  void props_get(const httplib::Request& req, httplib::Response& res);
  void props_post(const httplib::Request& req, httplib::Response& res);
  void models(const httplib::Request& req, httplib::Response& res);
  void tokenize(const httplib::Request& req, httplib::Response& res);
  void detokenize(const httplib::Request& req, httplib::Response& res);
  void apply_template(const httplib::Request& req, httplib::Response& res);  // routes_template.cpp

  serve::Engine& engine_;
  const text::ChatTemplate& tmpl_;
  HttpServerConfig cfg_;
  RequestGuardConfig guard_;
  size_t max_token_bytes_ = 1;  // the longest token's text: a prompt of B bytes has >= B / this tokens
  std::unique_ptr<Router> router_;
  std::unique_ptr<Transport> transport_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
};

}  // namespace tandem::http
