#include "http/server.h"

#include <cstdlib>
#include <random>

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <stdexcept>

#include "http/api_error.h"
#include "http/auth.h"
#include "http/error_map.h"
#include "serve/engine.h"

namespace tandem::http {

HttpServer::HttpServer(serve::Engine& engine, const text::ChatTemplate& tmpl, HttpServerConfig cfg)
    : engine_(engine), tmpl_(tmpl), cfg_(std::move(cfg)), svr_(std::make_unique<httplib::Server>()) {
  if (cfg_.model_names.empty()) cfg_.model_names.push_back("tandem");
  if (cfg_.media_marker.empty()) {
    // As llama.cpp's server: $LLAMA_MEDIA_MARKER, else a random marker per process, so that text a
    // user sends cannot be taken for an image.
    if (const char* env = std::getenv("LLAMA_MEDIA_MARKER"); env && *env) {
      cfg_.media_marker = env;
    } else {
      std::random_device rd;
      static const char* kHex = "0123456789abcdef";
      std::string r;
      for (int i = 0; i < 32; ++i) r += kHex[rd() & 15];
      cfg_.media_marker = "<__media_" + r + "__>";
    }
  }
  const auto& ec = engine_.config();
  const size_t threads = cfg_.http_threads > 0 ? static_cast<size_t>(cfg_.http_threads)
                                               : static_cast<size_t>(ec.n_parallel + ec.queue_max + 8);
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr_->set_payload_max_length(cfg_.max_body_bytes);
  svr_->set_keep_alive_timeout(5);
  svr_->set_read_timeout(30);
  svr_->set_write_timeout(30);
  svr_->set_tcp_nodelay(true);
  // The library listens with a backlog of 5: a burst of clients overflows the accept queue and
  // some of them see their connection dropped. Keep the listening socket to raise it after bind.
  svr_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (listen_fd_ < 0) listen_fd_ = static_cast<int>(sock);
  });

  svr_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (is_public_path(req.path) ||
        authorized(cfg_.api_key, req.get_header_value("Authorization"), req.get_header_value("X-Api-Key")))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, unauthorized(req.has_header("Authorization") || req.has_header("X-Api-Key")
                                     ? "invalid API key"
                                     : "missing API key: send \"Authorization: Bearer <key>\""));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Unknown routes, bodies over the limit, and httplib's own errors get a JSON body too.
  svr_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int st = res.status;
    std::string msg = st == 404   ? "unknown endpoint " + req.method + " " + req.path
                      : st == 413 ? "request body too large"
                      : st == 405 ? "method not allowed"
                                  : "HTTP error " + std::to_string(st);
    const char* type = st == 404 ? "not_found_error" : st >= 500 ? "server_error" : "invalid_request_error";
    res.set_content(to_text(error_body(st, type, msg)), "application/json; charset=utf-8");
  });
  svr_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    send_error(res, map_exception(ep));
  });
  add_routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add_routes() {
  using Handler = void (HttpServer::*)(const httplib::Request&, httplib::Response&);
  const auto wrap = [this](Handler h) {
    return [this, h](const httplib::Request& req, httplib::Response& res) {
      try {
        (this->*h)(req, res);
      } catch (...) {
        send_error(res, map_exception(std::current_exception()));
      }
    };
  };
  const auto gen = [this](Api api) {
    return [this, api](const httplib::Request& req, httplib::Response& res) {
      try {
        generate(req, res, api);
      } catch (...) {
        send_error(res, map_exception(std::current_exception()));
      }
    };
  };
  svr_->Post("/v1/chat/completions", gen(Api::OpenAiChat));
  svr_->Post("/chat/completions", gen(Api::OpenAiChat));
  svr_->Post("/completion", gen(Api::LlamaCompletion));
  svr_->Post("/completions", gen(Api::LlamaCompletion));
  svr_->Get("/health", wrap(&HttpServer::health));
  svr_->Get("/v1/health", wrap(&HttpServer::health));
  svr_->Get("/slots", wrap(&HttpServer::slots));
  svr_->Post(R"(/slots/([^/]+))", wrap(&HttpServer::slot_action));
  svr_->Get("/metrics", wrap(&HttpServer::metrics));
  svr_->Get("/props", wrap(&HttpServer::props_get));
  svr_->Post("/props", wrap(&HttpServer::props_post));
  svr_->Get("/v1/models", wrap(&HttpServer::models));
  svr_->Get("/models", wrap(&HttpServer::models));
  svr_->Post("/tokenize", wrap(&HttpServer::tokenize));
  svr_->Post("/detokenize", wrap(&HttpServer::detokenize));
}

int HttpServer::start() {
  if (started_.exchange(true)) return port_;
  if (cfg_.port == 0) {
    port_ = svr_->bind_to_any_port(cfg_.host);
    if (port_ <= 0) throw std::runtime_error("cannot bind to " + cfg_.host + " (any port)");
  } else {
    if (!svr_->bind_to_port(cfg_.host, cfg_.port))
      throw std::runtime_error("cannot bind to " + cfg_.host + ":" + std::to_string(cfg_.port));
    port_ = cfg_.port;
  }
  if (listen_fd_ >= 0) ::listen(listen_fd_, 1024);  // Linux: a second listen() sets the backlog
  thread_ = std::thread([this] { svr_->listen_after_bind(); });
  // stop() only reaches a server whose accept loop runs: wait for it (briefly).
  for (int i = 0; i < 5000 && !svr_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port_;
}

void HttpServer::stop() {
  stopping_ = true;  // handlers cancel their generations and return
  if (svr_) svr_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tandem::http
