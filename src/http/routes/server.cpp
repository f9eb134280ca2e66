#include "http/routes/server.h"

#include <cstdlib>
#include <random>

#include <httplib.h>

#include <stdexcept>

#include "http/api/api_error.h"
#include "http/api/error_map.h"
#include "http/transport/auth.h"
#include "http/transport/memory_policy.h"
#include "http/transport/request_framing.h"
#include "http/transport/router.h"
#include "http/transport/transport.h"
#include "serve/engine/engine.h"

namespace tandem::http {

namespace {

// An answer kept in memory (serve_bytes).
class StringSink final : public ResponseSink {
 public:
  bool write(const char* data, size_t n) override {
    out.append(data, n);
    return true;
  }
  bool writable() const override { return true; }
  std::string out;
};

// A request whose body was at least this large is followed by giving freed memory back to the
// system (http/transport/memory_policy.h): its parse trees and copies were freed in the worker's malloc arena.
constexpr size_t kTrimAfterBodyBytes = size_t(1) << 20;

}  // namespace

HttpServer::HttpServer(serve::Engine& engine, const text::ChatTemplate& tmpl, HttpServerConfig cfg)
    : engine_(engine), tmpl_(tmpl), cfg_(std::move(cfg)), router_(std::make_unique<Router>()) {
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
  guard_.bound_host = cfg_.host;
  guard_.allowed_hosts = cfg_.allowed_hosts;
  // The longest text a token stands for: a prompt of B bytes is at least B / this many tokens,
  // which refuses a prompt far too long for the context before it is tokenized.
  const text::Vocabulary& vocab = engine_.tokenizer().vocab();
  for (int32_t id = 0; id < vocab.size(); ++id) max_token_bytes_ = std::max(max_token_bytes_, vocab.token_bytes(id).size());

  router_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (is_public_path(req.path) ||
        authorized(cfg_.api_key, req.get_header_value("Authorization"), req.get_header_value("X-Api-Key")))
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, unauthorized(req.has_header("Authorization") || req.has_header("X-Api-Key")
                                     ? "invalid API key"
                                     : "missing API key: send \"Authorization: Bearer <key>\""));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Unknown routes and the router's own errors get a JSON body too.
  router_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int st = res.status;
    std::string msg = st == 404   ? "unknown endpoint " + req.method + " " + req.path
                      : st == 413 ? "request body too large"
                      : st == 405 ? "method not allowed"
                                  : "HTTP error " + std::to_string(st);
    const char* type = st == 404 ? "not_found_error" : st >= 500 ? "server_error" : "invalid_request_error";
    res.set_content(to_text(error_body(st, type, msg)), "application/json; charset=utf-8");
  });
  router_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    send_error(res, map_exception(ep));
  });
  router_->set_keep_alive_timeout(std::max(1, cfg_.keep_alive_ms / 1000));  // the Keep-Alive header's figure
  router_->set_keep_alive_max_count(1000);
  // The framer enforces the body limit for every transfer encoding; the router's own check (a
  // Content-Length header, which the canonical request always has) says the same.
  router_->set_payload_max_length(cfg_.max_body_bytes);
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
  router_->Post("/v1/chat/completions", gen(Api::OpenAiChat));
  router_->Post("/chat/completions", gen(Api::OpenAiChat));
  router_->Post("/completion", gen(Api::LlamaCompletion));
  router_->Post("/completions", gen(Api::LlamaCompletion));
  router_->Get("/health", wrap(&HttpServer::health));
  router_->Get("/v1/health", wrap(&HttpServer::health));
  router_->Get("/slots", wrap(&HttpServer::slots));
  router_->Post(R"(/slots/([^/]+))", wrap(&HttpServer::slot_action));
  router_->Get("/metrics", wrap(&HttpServer::metrics));
  router_->Get("/props", wrap(&HttpServer::props_get));
  router_->Post("/props", wrap(&HttpServer::props_post));
  router_->Get("/v1/models", wrap(&HttpServer::models));
  router_->Get("/models", wrap(&HttpServer::models));
  router_->Post("/tokenize", wrap(&HttpServer::tokenize));
  router_->Post("/detokenize", wrap(&HttpServer::detokenize));
  router_->Post("/apply-template", wrap(&HttpServer::apply_template));
}

bool HttpServer::handle(FramedRequest& req, ResponseSink& sink, const Peer& peer) {
  const bool close_after = !req.keep_alive || stopping();
  if (auto refusal = check_request(req, guard_, peer.remote_addr == "unix")) {
    const std::string r = simple_response(refusal->status(), to_text(error_body(*refusal)), close_after);
    return sink.write(r.data(), r.size()) && !close_after;
  }
  const std::string head = req.canonical_head();
  const bool keep = router_->serve(head, req.body, sink, peer, close_after);
  if (req.body.size() >= kTrimAfterBodyBytes) {
    std::string().swap(req.body);
    release_free_memory();
  }
  return keep;
}

std::string HttpServer::serve_bytes(std::string_view raw, std::vector<int>* statuses) {
  FramingLimits limits;
  limits.max_body_bytes = cfg_.max_body_bytes;
  FramedAll all = frame_all(raw, limits);
  StringSink sink;
  Peer peer{"127.0.0.1", 40000, "127.0.0.1", port_};
  const auto note = [&](size_t at) {  // "HTTP/1.1 NNN" where the answer began; 0: no answer
    if (!statuses) return;
    const bool line = sink.out.size() >= at + 12 && sink.out.compare(at, 9, "HTTP/1.1 ") == 0;
    statuses->push_back(line ? std::atoi(sink.out.c_str() + at + 9) : 0);
  };
  for (FramedRequest& r : all.requests) {
    const size_t at = sink.out.size();
    const bool keep = handle(r, sink, peer);
    note(at);
    if (!keep) return sink.out;
  }
  if (all.refused) {
    if (statuses) statuses->push_back(all.error.status);
    const ApiError e(all.error.status, all.error.status >= 500 ? "server_error" : "invalid_request_error",
                     all.error.message);
    sink.out += simple_response(e.status(), to_text(error_body(e)), true);
  }
  return sink.out;
}

const TransportStats* HttpServer::transport_stats() const { return transport_ ? &transport_->stats() : nullptr; }

int HttpServer::start() {
  if (started_.exchange(true)) return port_;
  const auto& ec = engine_.config();
  TransportConfig tc;
  tc.workers = cfg_.http_threads > 0 ? cfg_.http_threads : ec.n_parallel + ec.queue_max + 8;
  tc.max_connections = cfg_.max_connections;
  tc.request_timeout_ms = cfg_.request_timeout_ms;
  tc.idle_timeout_ms = cfg_.keep_alive_ms;
  tc.write_timeout_ms = cfg_.write_timeout_ms;
  tc.max_buffered_bytes = cfg_.max_buffered_bytes;
  tc.limits.max_body_bytes = cfg_.max_body_bytes;
  tc.error_body = [](int status, const std::string& message) {
    return to_text(error_body(status, status >= 500 ? "unavailable_error" : "invalid_request_error", message));
  };
  transport_ = std::make_unique<Transport>(
      tc, [this](FramedRequest& req, ResponseSink& sink, const Peer& peer) { return handle(req, sink, peer); });
  if (!cfg_.unix_socket.empty()) {
    transport_->listen_unix(cfg_.unix_socket);
    port_ = 0;
  } else {
    port_ = transport_->listen_tcp(cfg_.host, cfg_.port);
  }
  transport_->start();
  return port_;
}

void HttpServer::stop() {
  stopping_ = true;  // handlers cancel their generations and return
  router_->set_shutting_down();
  if (transport_) transport_->stop();
}

}  // namespace tandem::http
