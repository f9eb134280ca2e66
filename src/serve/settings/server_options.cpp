#include "serve/settings/server_options.h"

#include <stdexcept>

namespace tandem::serve {

namespace {



// An integer row (serving_settings.h's builder; no front-end row changes a count).
template <class Field>
FrontEndSetting int_row(std::vector<std::string> names, std::vector<std::string> aliases, std::string value,
                        std::string help, int64_t lo, int64_t hi, Field field) {
  return int_setting<ServerOptions>(std::move(names), std::move(aliases), std::move(value), std::move(help), false, lo,
                                    hi, field);
}

FrontEndSetting row(std::vector<std::string> names, std::vector<std::string> aliases, std::string value, std::string help,
                    std::function<void(ServerOptions&, const std::string&, const std::string&)> set,
                    std::function<std::string(const ServerOptions&)> get = {}) {
  FrontEndSetting r;
  r.names = std::move(names);
  r.aliases = std::move(aliases);
  r.value = std::move(value);
  r.help = std::move(help);
  r.set = std::move(set);
  r.get = std::move(get);
  return r;
}

std::vector<FrontEndSetting> make_front_end_table() {
  using O = ServerOptions;
  using S = const std::string&;
  std::vector<FrontEndSetting> t;
  t.push_back(row({"-m", "--model"}, {}, "FILE", "qwen35 GGUF model (required)", [](O& o, S, S v) { o.model_path = v; }));
  t.push_back(row({"--mmproj"}, {}, "FILE",
                  "vision projector (mmproj GGUF): requests may then carry images\n"
                  "(image_url parts, /completion multimodal_data)",
                  [](O& o, S, S v) { o.mmproj_path = v; }));
  t.push_back(row({"--host"}, {}, "ADDR", "listen address (default {})", [](O& o, S, S v) { o.host = v; },
                  [](const O& o) { return o.host; }));
  t.push_back(int_row({"--port"}, {}, "N", "port (default {}; 0 = pick a free one and print it)",
                      0, 65535, [](auto& o) -> auto& { return o.port; }));
  t.push_back(row({"--api-key"}, {}, "KEY", "require \"Authorization: Bearer KEY\" on everything but /health",
                  [](O& o, S, S v) { o.api_key = v; }));
  t.push_back(row({"--alias"}, {"-a"}, "NAME", "also accept NAME as the request's \"model\" (repeatable)",
                  [](O& o, S, S v) { o.aliases.push_back(v); }));
  t.push_back(int_row({"-t", "--threads"}, {}, "N", "compute threads (default: one per physical core)",
                      0, 4096, [](auto& o) -> auto& { return o.threads; }));
  t.push_back(int_row({"--http-threads"}, {}, "N", "threads that run complete requests (default: parallel + queue + 8)",
                      0, 4096, [](auto& o) -> auto& { return o.http_threads; }));
  t.push_back(int_row({"--idle-release-ms"}, {}, "N", "release compute resources after N ms idle, 0 = never (default {})",
                      0, kSettingUnbounded, [](auto& o) -> auto& { return o.idle_release_ms; }));
  t.push_back(row({"--cpu-dma-latency"}, {}, "",
                  "while active, hold a /dev/cpu_dma_latency request (no deep C-states)\n"
                  "when that device is writable; closed on release (default {})",
                  [](O& o, S, S) { o.cpu_dma_latency = true; }, [](const O& o) { return on_off(o.cpu_dma_latency); }));
  t.push_back(row({"--log-requests"}, {}, "FILE", "append one JSON line per request (all serving numbers, token ids)",
                  [](O& o, S, S v) { o.log_requests = v; }));
  t.push_back(row({"--cpu-path"}, {}, "T", "kernel tier: scalar | avx2 | avx512 | amx (x86-64), neon | dotprod | i8mm (Arm64) (default: the best available)",
                  [](O& o, S, S v) { o.cpu_path = v; }));
  t.push_back(row({"--json-whitespace"}, {}, "W",
                  "JSON Schema grammars: flexible (llama.cpp's optional whitespace after\n"
                  "punctuation) or compact (none: keys and punctuation become forced\n"
                  "drafts); a request's \"tandem\": {\"json_whitespace\"} overrides (default {})",
                  [](O& o, S f, S v) {
                    if (v == "flexible") o.json_compact = false;
                    else if (v == "compact") o.json_compact = true;
                    else throw std::invalid_argument(f + ": expected flexible or compact, got '" + v + "'");
                  },
                  [](const O& o) { return std::string(o.json_compact ? "compact" : "flexible"); }));
  t.push_back(row({"--reasoning-format"}, {}, "F",
                  "chat answers' leading <think> block: none (left in content), deepseek\n"
                  "(in reasoning_content, streamed as reasoning_content deltas), auto (as\n"
                  "deepseek), deepseek-legacy (both; streamed as none); a request's\n"
                  "\"reasoning_format\" overrides (default {})",
                  [](O& o, S f, S v) {
                    const auto r = text::reasoning_format_from_name(v);
                    if (!r) throw std::invalid_argument(f + ": expected " + text::reasoning_format_names() + ", got '" + v + "'");
                    o.reasoning_format = *r;
                  },
                  [](const O& o) { return std::string(text::reasoning_format_name(o.reasoning_format)); }));
  // Clients (docs/http.md "Hostile clients").
  t.push_back(row({"--socket"}, {}, "PATH",
                  "listen on a Unix socket at PATH (mode 0660) instead of --host/--port;\n"
                  "requests over it skip the Host and Origin checks",
                  [](O& o, S, S v) { o.unix_socket = v; }));
  t.push_back(row({"--allow-host"}, {}, "NAME",
                  "also answer requests whose Host is NAME (repeatable); localhost, IP\n"
                  "addresses and --host always are; '*' accepts any Host and Origin",
                  [](O& o, S, S v) { o.allow_hosts.push_back(v); }));
  t.push_back(int_row({"--max-connections"}, {}, "N",
                      "open connections; at the cap the idle or slowest one makes room,\n"
                      "503 when all run requests (default {})",
                      1, 1 << 20, [](auto& o) -> auto& { return o.max_connections; }));
  t.push_back(int_row({"--request-timeout-s"}, {}, "S",
                      "a request's head and body must arrive within S s of its first byte;\n"
                      "slower clients get 408 and are dropped (default {})",
                      1, 3600, [](auto& o) -> auto& { return o.request_timeout_s; }));
  t.push_back(int_row({"--keep-alive-s"}, {}, "S", "close a connection idle between requests after S s (default {})",
                      1, 3600, [](auto& o) -> auto& { return o.keep_alive_s; }));
  t.push_back(int_row({"--write-timeout-s"}, {}, "S", "drop a client that accepts no answer bytes for S s (default {})",
                      1, 3600, [](auto& o) -> auto& { return o.write_timeout_s; }));
  t.push_back(int_row({"--max-body-mib"}, {}, "MIB", "largest request body, any transfer encoding; beyond: 413 (default {})",
                      1, 4096, [](auto& o) -> auto& { return o.max_body_mib; }));
  t.push_back(int_row({"--max-buffered-mib"}, {}, "MIB",
                      "request bytes held across all connections until answered; a request\n"
                      "that would pass it gets 503 before its body is read (default {})",
                      1, 1 << 20, [](auto& o) -> auto& { return o.max_buffered_mib; }));
  t.push_back(row({"-h", "--help"}, {}, "", "this text", [](O& o, S, S) { o.help = true; }));
  return t;
}

}  // namespace

const std::vector<FrontEndSetting>& front_end_settings() {
  static const std::vector<FrontEndSetting> table = make_front_end_table();
  return table;
}

ServerOptions default_server_options() { return ServerOptions{}; }

ServerOptions parse_server_args(const std::vector<std::string>& args) {
  ServerOptions o = default_server_options();
  const auto& front = front_end_settings();
  const auto& serving = serving_settings();
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (const auto* r = find_setting<ServerOptions>(front, a)) apply_setting(*r, o, args, i);
    else if (const auto* s = find_setting<EngineConfig>(serving, a)) apply_setting(*s, o.engine, args, i);
    else throw std::invalid_argument("unknown argument '" + a + "' (see --help)");
  }
  if (o.help) return o;
  if (o.model_path.empty()) throw std::invalid_argument("-m MODEL.gguf is required");
  validate_serving(o.engine);
  if (o.max_buffered_mib < o.max_body_mib)
    throw std::invalid_argument("--max-buffered-mib " + std::to_string(o.max_buffered_mib) + " is below --max-body-mib " +
                                std::to_string(o.max_body_mib) + ": a request of the largest size could never be read");
  return o;
}

std::string server_usage() {
  std::string u =
      "usage: tandem-server -m MODEL.gguf [options]\n"
      "\n"
      "OpenAI-compatible (/v1/chat/completions) and llama.cpp-compatible (/completion) HTTP server.\n"
      "\n";
  u += settings_help<ServerOptions>(front_end_settings(), ServerOptions{});
  u += "\nServing settings (tandem-sim --config takes the same flags; GET /props shows them):\n";
  u += settings_help<EngineConfig>(serving_settings(), EngineConfig{});
  u +=
      "\n"
      "Endpoints: POST /v1/chat/completions, POST /completion, GET /health, GET /slots, GET /metrics,\n"
      "GET|POST /props, GET /v1/models, POST /tokenize, POST /detokenize (docs/http.md).\n"
      "\n"
      "Exit status: 0 stopped by SIGINT/SIGTERM, 1 failed to start, 2 bad command line,\n"
      "75 the watchdog fired (--watchdog-s): restart the server (systemd Restart=on-failure).\n";
  return u;
}

}  // namespace tandem::serve
