// libFuzzer harness for the HTTP server's request path (issue 51): raw bytes, framing included,
// through HttpServer::serve_bytes — the strict framer (http/transport/request_framing.h), the request guard
// (Host, Origin, Content-Type), cpp-httplib's router over the canonical request, and every route's
// handler against a real engine on the tiny generated model (1 slot, 64-token context: a
// generation the input asks for is short). No socket: the answers go to a string.
//
// Every input must be answered (a status line for each framed request, or a refusal) without a
// crash, a sanitizer report, a leak or a hang; a 5xx answer to a request that framed is reported
// as a bug (the input is a client's mistake or it is served), except 503s (busy, shutting down).
// Run with fuzz/run_http_fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/routes/server.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "serve/engine/engine.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

using namespace tandem;

namespace {

struct Env {
  std::unique_ptr<Qwen35Model> model;
  std::unique_ptr<text::Tokenizer> tok;
  text::ChatTemplate tmpl{text::ChatTemplateFamily::ChatML};
  std::unique_ptr<serve::Engine> engine;
  std::unique_ptr<http::HttpServer> server;
};

Env& env() {
  static Env* e = [] {
    auto* x = new Env;
    x->model = Qwen35Model::load(ensure_tiny_model("F32"), 1);
    x->tok = text::Tokenizer::from_gguf(x->model->file());
    x->tmpl = text::ChatTemplate::from_gguf_template(x->tok->vocab().chat_template());
    serve::EngineConfig c;
    c.n_parallel = 1;
    c.queue_max = 2;
    c.n_ctx = 64;
    c.cache_ram_mib = 4;
    c.timeout_ms = 5000;
    c.watchdog.deadline_ms = 0;  // no exit from under the fuzzer
    x->engine = std::make_unique<serve::Engine>(*x->model, *x->tok, c);
    http::HttpServerConfig hc;
    hc.model_names = {"tiny"};
    hc.max_body_bytes = 1 << 20;
    x->server = std::make_unique<http::HttpServer>(*x->engine, x->tmpl, hc);
    return x;
  }();
  return *e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Env& e = env();
  std::vector<int> statuses;
  const std::string out =
      e.server->serve_bytes(std::string_view(reinterpret_cast<const char*>(data), size), &statuses);
  for (const int status : statuses) {
    // 501 / 505: a method or HTTP version not implemented, the framer's refusals of the client.
    if (status >= 500 && status != 503 && status != 501 && status != 505) {
      std::fprintf(stderr, "http_fuzz: status %d; the answers:\n%s\n", status, out.substr(0, 2000).c_str());
      std::abort();
    }
    if (status < 100) {
      std::fprintf(stderr, "http_fuzz: an answer without a status line:\n%s\n", out.substr(0, 2000).c_str());
      std::abort();
    }
  }
  return 0;
}
