// tandem-server's command line -> ServerOptions (kept out of main so that tests parse flags too).
// Two tables of the same row type (SettingRow): the front end's own flags below (model, listen
// address, threads, idle release, ...: none changes a count), and the serving settings of
// serving_settings.h (everything in EngineConfig). The parser and --help read both; the defaults
// are the member initializers (ServerOptions' and EngineConfig's), nowhere else. Below http/,
// beside the serving settings, because tandem-sim reads a server's command line too
// (agent::parse_serve_flags: it skips these rows with their values) and agent/ does not include
// http/; the HTTP server takes what it needs as its own HttpServerConfig.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/engine/engine.h"
#include "serve/settings/serving_settings.h"
#include "text/reasoning.h"

namespace tandem::serve {

struct ServerOptions {
  std::string model_path;             // -m
  std::string mmproj_path;            // --mmproj (empty: text only)
  std::string host = "127.0.0.1";     // --host
  int port = 8080;                    // --port (0: any free port, printed at start)
  std::string api_key;                // --api-key
  int threads = 0;                    // --threads (compute; 0: one per physical core)
  int http_threads = 0;               // --http-threads (0: parallel + queue + 8)
  int64_t idle_release_ms = 3000;     // --idle-release-ms
  bool cpu_dma_latency = false;       // --cpu-dma-latency (hold a PM QoS request while active)
  std::string log_requests;           // --log-requests FILE
  std::string cpu_path;               // --cpu-path scalar|avx2|avx512|amx
  bool json_compact = false;          // --json-whitespace compact (JSON Schema grammars allow no whitespace)
  text::ReasoningFormat reasoning_format = text::ReasoningFormat::Auto;  // --reasoning-format (llama.cpp's default)
  std::vector<std::string> aliases;   // --alias NAME (accepted "model" values besides the file name)
  // Clients (issue 51; http/transport/transport.h, http/transport/request_guard.h).
  std::string unix_socket;            // --socket PATH (instead of --host/--port)
  std::vector<std::string> allow_hosts;  // --allow-host NAME (repeatable; "*": any Host and Origin)
  int max_connections = 512;          // --max-connections
  int request_timeout_s = 10;         // --request-timeout-s (head + body from the first byte)
  int keep_alive_s = 5;               // --keep-alive-s
  int write_timeout_s = 30;           // --write-timeout-s
  int64_t max_body_mib = 32;          // --max-body-mib (every transfer encoding)
  int64_t max_buffered_mib = 256;     // --max-buffered-mib (request bytes held across connections)
  EngineConfig engine;         // the serving settings (serve::serving_settings(): --ctx-size, --parallel, ...)
  bool help = false;                  // --help
};

using FrontEndSetting = SettingRow<ServerOptions>;
// The front end's own flags, in --help order (none changes the replay model's counts).
const std::vector<FrontEndSetting>& front_end_settings();

// ServerOptions{}: the member initializers are the defaults (--help prints them).
ServerOptions default_server_options();
// args excludes the program name. Throws std::invalid_argument naming the flag.
ServerOptions parse_server_args(const std::vector<std::string>& args);
// Generated from the two tables.
std::string server_usage();

}  // namespace tandem::serve
