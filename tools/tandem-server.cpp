// tandem-server: OpenAI- and llama.cpp-compatible HTTP server (docs/http.md).
//
//   tandem-server -m model.gguf --port 8080 --parallel 4
//   tandem-server -m model.gguf --port 0          # prints the port it picked
//
// Stops on SIGINT / SIGTERM: requests in flight are cancelled; with --state-dir the slots and the
// prompt cache are written there (a restart loads them), otherwise the states are freed.
// Exits with status 75 when the watchdog fires (serve/lifecycle/watchdog.h): a supervisor restarts it.
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/api/request_log.h"
#include "http/routes/server.h"
#include "http/transport/memory_policy.h"
#include "model/architectures.h"
#include "runtime/cpu_features.h"
#include "serve/engine/engine.h"
#include "serve/settings/server_options.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "vision/vision_model.h"

int main(int argc, char** argv) {
  using namespace tandem;
  serve::ServerOptions opt;
  try {
    opt = serve::parse_server_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-server: %s\n\n%s", e.what(), serve::server_usage().c_str());
    return 2;
  }
  if (opt.help) {
    std::fputs(serve::server_usage().c_str(), stdout);
    return 0;
  }
  // Test hook (http/routes/server_watchdog_test.cpp): every forward pass hangs, the stuck worker the
  // watchdog turns into exit status 75. Not a flag: nothing but that test should ever set it.
  if (const char* hang = std::getenv("TANDEM_TEST_WATCHDOG_HANG"); hang && std::string(hang) == "1")
    opt.engine.watchdog.work_hook = [](const serve::WorkUnit& u) {
      if (u.kind != serve::WorkKind::Pass) return;
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    };
  // Large buffers always their own mapping, returned when freed (http/transport/memory_policy.h).
  http::configure_allocator();
  // Every connection is a descriptor (--max-connections): the soft limit up to the hard one, and a
  // warning when the cap still does not fit (the transport then stops accepting until one frees).
  if (rlimit nofile{}; getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
    getrlimit(RLIMIT_NOFILE, &nofile);
    if (nofile.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(opt.max_connections) + 64 > nofile.rlim_cur)
      std::fprintf(stderr, "tandem-server: warning: --max-connections %d does not fit the descriptor limit %llu\n",
                   opt.max_connections, static_cast<unsigned long long>(nofile.rlim_cur));
  }
  // Every thread inherits this mask; the main thread waits for the signals below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  try {
    LoadOptions load;
    load.n_threads = opt.threads;
    if (!opt.cpu_path.empty()) {
      const auto tier = cpu_tier_from_name(opt.cpu_path);
      if (!tier)
        throw std::invalid_argument(std::string("--cpu-path: expected one of ") + cpu_tier_names() + ", got '" +
                                    opt.cpu_path + "'");
      load.tier = *tier;  // lowered to the machine's best by the model
    }
    auto model = load_model(opt.model_path, load);
    std::fprintf(stderr, "tandem-server: kernel tier %s", cpu_tier_name(model->cpu_tier()));
    if (model->packed_weight_bytes() > 0)
      std::fprintf(stderr, "; weights packed at load (16-row groups): %.1f MiB", model->packed_weight_bytes() / 1048576.0);
    std::fprintf(stderr, "\n");
    model->governor().set_idle_release_ms(opt.idle_release_ms);
    model->governor().set_dma_latency(opt.cpu_dma_latency);
    const auto tok = text::Tokenizer::from_gguf(model->file());
    text::ChatTemplate tmpl(text::ChatTemplateFamily::ChatML);
    try {
      tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template(), text::chat_template_tokens(*tok));
      if (!tmpl.exact()) std::fprintf(stderr, "tandem-server: warning: %s\n", tmpl.note().c_str());
      if (tmpl.is_interpreted())
        std::fprintf(stderr, "tandem-server: chat template: not a native family; rendered by the Jinja interpreter\n");
    } catch (const text::ChatTemplateLoadError&) {
      throw;  // a template the interpreter cannot run: the load fails (never a wrong prompt)
    } catch (const text::ChatTemplateError& e) {
      std::fprintf(stderr, "tandem-server: warning: %s; using ChatML\n", e.what());
    }

    std::unique_ptr<vision::VisionModel> vision;
    if (!opt.mmproj_path.empty()) {
      vision::VisionLoadOptions vo;
      vo.n_threads = opt.threads;
      vo.tier = model->cpu_tier();
      vision = vision::VisionModel::load(opt.mmproj_path, vo);
      vision->check_text_model(model->shape().n_embd, opt.model_path);  // both files named on a mismatch
      std::fprintf(stderr, "tandem-server: vision encoder %s (%s)\n", opt.mmproj_path.c_str(),
                   cpu_tier_name(vision->cpu_tier()));
    }
    serve::Engine engine(*model, *tok, opt.engine, vision.get());
    if (!opt.engine.state_dir.empty()) {
      const serve::LifecycleStats L = engine.snapshot().lifecycle;
      std::fprintf(stderr, "tandem-server: state dir %s: %llu files loaded (%.1f MiB), %llu refused\n",
                   opt.engine.state_dir.c_str(), static_cast<unsigned long long>(L.state_files_loaded),
                   L.state_bytes_loaded / 1048576.0, static_cast<unsigned long long>(L.state_files_refused));
    }
    std::unique_ptr<http::RequestLog> log;
    if (!opt.log_requests.empty()) {
      log = std::make_unique<http::RequestLog>(opt.log_requests);
      engine.set_finish_hook([&log](const serve::EngineRequest& req, const serve::GenerationResult& r, uint64_t id) {
        log->write(req, r, id);
      });
    }

    http::HttpServerConfig hc;
    hc.host = opt.host;
    hc.port = opt.port;
    hc.api_key = opt.api_key;
    hc.http_threads = opt.http_threads;
    hc.model_path = opt.model_path;
    hc.mmproj_path = opt.mmproj_path;
    hc.model_names = opt.aliases;
    hc.json_whitespace = opt.json_compact ? grammar::JsonWhitespace::Compact : grammar::JsonWhitespace::Flexible;
    hc.reasoning_format = opt.reasoning_format;
    hc.unix_socket = opt.unix_socket;
    hc.allowed_hosts = opt.allow_hosts;
    hc.max_connections = opt.max_connections;
    hc.request_timeout_ms = opt.request_timeout_s * 1000;
    hc.keep_alive_ms = opt.keep_alive_s * 1000;
    hc.write_timeout_ms = opt.write_timeout_s * 1000;
    hc.max_body_bytes = static_cast<size_t>(opt.max_body_mib) << 20;
    hc.max_buffered_bytes = static_cast<size_t>(opt.max_buffered_mib) << 20;
    const std::filesystem::path p(opt.model_path);
    hc.model_names.push_back(p.filename().string());
    if (p.stem() != p.filename()) hc.model_names.push_back(p.stem().string());
    http::HttpServer server(engine, tmpl, hc);
    const int port = server.start();
    const std::string where = opt.unix_socket.empty() ? "http://" + opt.host + ":" + std::to_string(port)
                                                      : "unix:" + opt.unix_socket;
    std::printf("tandem-server: listening on %s (%d slots x %lld tokens, policy %s, model %s)\n", where.c_str(),
                opt.engine.n_parallel, static_cast<long long>(opt.engine.n_ctx),
                std::string(serve::to_string(opt.engine.policy.kind)).c_str(), hc.model_names.front().c_str());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "tandem-server: signal %d, stopping\n", sig);
    server.stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-server: %s\n", e.what());
    return 1;
  }
  return 0;
}
