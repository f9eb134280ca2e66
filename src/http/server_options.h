// tandem-server's command line -> ServerOptions (kept out of main so that tests parse flags too).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/engine.h"

namespace tandem::http {

struct ServerOptions {
  std::string model_path;             // -m
  std::string host = "127.0.0.1";     // --host
  int port = 8080;                    // --port (0: any free port, printed at start)
  std::string api_key;                // --api-key
  int threads = 0;                    // --threads (compute; 0: one per physical core)
  int http_threads = 0;               // --http-threads (0: parallel + queue + 8)
  int64_t idle_release_ms = 3000;     // --idle-release-ms
  bool cpu_dma_latency = false;       // --cpu-dma-latency (hold a PM QoS request while active)
  std::string log_requests;           // --log-requests FILE
  std::string cpu_path;               // --cpu-path scalar|avx2|avx512|amx
  std::vector<std::string> aliases;   // --alias NAME (accepted "model" values besides the file name)
  serve::EngineConfig engine;         // --ctx-size --parallel --queue --timeout-ms --ctx-checkpoints --cache-ram
                                      // --checkpoint-policy --min-gap --consolidate-batches --n-batch --n-ubatch
  bool help = false;                  // --help
};

// Defaults as documented (ctx-size 4096, parallel 1, queue 64, ctx-checkpoints 8, cache-ram 512,
// divergence, min-gap 8, consolidation on, n-batch 2048, n-ubatch 512).
ServerOptions default_server_options();
// args excludes the program name. Throws std::invalid_argument naming the flag.
ServerOptions parse_server_args(const std::vector<std::string>& args);
std::string server_usage();

}  // namespace tandem::http
