// The HTTP front of an Engine: routes, authentication, error mapping, streaming. Handlers run on
// cpp-httplib's worker threads; generation itself runs on the engine's scheduler thread.
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
#include <thread>
#include <vector>

// Declarations only: a tool that starts a server includes serve/engine.h itself, and none of the
// engine's, the model's or the kernels' headers come in through this one.
namespace tandem::serve {
class Engine;
}  // namespace tandem::serve
namespace tandem::text {
class ChatTemplate;
}  // namespace tandem::text

#include "grammar/json_schema.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tandem::http {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 0;                           // 0: any free port
  std::string api_key;                    // empty: no authentication
  int http_threads = 0;                   // 0: parallel + queue + 8
  std::vector<std::string> model_names;   // accepted "model" values; the first is reported
  std::string model_path;                 // reported by /props
  size_t max_body_bytes = 32u << 20;
  // JSON Schema whitespace when a request does not say (http/grammar_request.h).
  grammar::JsonWhitespace json_whitespace = grammar::JsonWhitespace::Flexible;
  // What stands for an image in a /completion prompt_string (/props reports it as "media_marker").
  // Empty: $LLAMA_MEDIA_MARKER, else a random one per server (llama.cpp's way).
  std::string media_marker;
  std::string mmproj_path;  // reported by /props when the engine has a vision model
};

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

 private:
  void add_routes();
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

  serve::Engine& engine_;
  const text::ChatTemplate& tmpl_;
  HttpServerConfig cfg_;
  std::unique_ptr<httplib::Server> svr_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the listening socket (owned by httplib)
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
};

}  // namespace tandem::http
