#include "http/server_options.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace tandem::http {

namespace {

int64_t to_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument(flag + ": expected an integer, got '" + v + "'");
  if (x < lo || x > hi)
    throw std::invalid_argument(flag + ": expected a value in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got " + v);
  return x;
}

bool to_on_off(const std::string& flag, const std::string& v) {
  if (v == "on" || v == "1" || v == "true") return true;
  if (v == "off" || v == "0" || v == "false") return false;
  throw std::invalid_argument(flag + ": expected on or off, got '" + v + "'");
}

// --spec-rollback: true = replay.
bool parse_rollback(const std::string& v) {
  if (v == "replay") return true;
  if (v == "copy") return false;
  throw std::invalid_argument("--spec-rollback: expected replay or copy, got '" + v + "'");
}

float to_probability(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !(x >= 0.0 && x <= 1.0))
    throw std::invalid_argument(flag + ": expected a probability in [0, 1], got '" + v + "'");
  return static_cast<float>(x);
}

}  // namespace

ServerOptions default_server_options() {
  ServerOptions o;
  o.engine.n_parallel = 1;
  o.engine.n_ctx = 4096;
  o.engine.queue_max = 64;
  o.engine.timeout_ms = 0;
  o.engine.slot.ctx_checkpoints = 8;
  o.engine.slot.batch.n_batch = 2048;
  o.engine.slot.batch.n_ubatch = 512;
  o.engine.slot.batch.consolidate = true;
  o.engine.cache_ram_mib = 512;
  o.engine.policy.kind = serve::PolicyKind::Divergence;
  o.engine.policy.divergence.min_gap = 8;
  return o;
}

ServerOptions parse_server_args(const std::vector<std::string>& args) {
  ServerOptions o = default_server_options();
  constexpr int64_t kBig = int64_t(1) << 40;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "-m" || a == "--model") o.model_path = next();
    else if (a == "--host") o.host = next();
    else if (a == "--port") o.port = static_cast<int>(to_int(a, next(), 0, 65535));
    else if (a == "--api-key") o.api_key = next();
    else if (a == "-t" || a == "--threads") o.threads = static_cast<int>(to_int(a, next(), 0, 4096));
    else if (a == "--http-threads") o.http_threads = static_cast<int>(to_int(a, next(), 0, 4096));
    else if (a == "--idle-release-ms") o.idle_release_ms = to_int(a, next(), 0, kBig);
    else if (a == "--cpu-dma-latency") o.cpu_dma_latency = true;
    else if (a == "--log-requests") o.log_requests = next();
    else if (a == "--cpu-path") o.cpu_path = next();
    else if (a == "--alias" || a == "-a") o.aliases.push_back(next());
    else if (a == "-c" || a == "--ctx-size") o.engine.n_ctx = to_int(a, next(), 2, kBig);
    else if (a == "-np" || a == "--parallel") o.engine.n_parallel = static_cast<int>(to_int(a, next(), 1, 1024));
    else if (a == "--queue") o.engine.queue_max = static_cast<int>(to_int(a, next(), 0, 1 << 20));
    else if (a == "--timeout-ms") o.engine.timeout_ms = to_int(a, next(), 0, kBig);
    else if (a == "--ctx-checkpoints") o.engine.slot.ctx_checkpoints = static_cast<int>(to_int(a, next(), 0, 1 << 20));
    else if (a == "--cache-ram") o.engine.cache_ram_mib = static_cast<size_t>(to_int(a, next(), 0, kBig));
    else if (a == "--checkpoint-policy") o.engine.policy.kind = serve::parse_policy_kind(next());
    else if (a == "--min-gap") o.engine.policy.divergence.min_gap = to_int(a, next(), 0, kBig);
    else if (a == "--consolidate-batches") o.engine.slot.batch.consolidate = to_on_off(a, next());
    else if (a == "-b" || a == "--n-batch" || a == "--batch-size") o.engine.slot.batch.n_batch = to_int(a, next(), 1, kBig);
    else if (a == "-ub" || a == "--n-ubatch" || a == "--ubatch-size") o.engine.slot.batch.n_ubatch = to_int(a, next(), 1, kBig);
    else if (a == "--spec") o.engine.speculation.enabled = to_on_off(a, next());
    else if (a == "--draft-max") o.engine.speculation.draft_max = static_cast<int>(to_int(a, next(), 1, 16));
    else if (a == "--draft-min") o.engine.speculation.draft_min = static_cast<int>(to_int(a, next(), 0, 16));
    else if (a == "--draft-p-min") o.engine.speculation.p_min = to_probability(a, next());
    else if (a == "--spec-rollback-aware") o.engine.speculation.rollback_aware_prefill = to_on_off(a, next());
    else if (a == "--spec-column-shared") o.engine.speculation.column_shared_verify = to_on_off(a, next());
    else if (a == "--spec-trimmed-head") o.engine.speculation.trimmed_head = to_on_off(a, next());
    else if (a == "--spec-rollback") o.engine.speculation.replay_rollback = parse_rollback(next());
    else if (a == "-h" || a == "--help") o.help = true;
    else throw std::invalid_argument("unknown argument '" + a + "' (see --help)");
  }
  if (o.help) return o;
  if (o.model_path.empty()) throw std::invalid_argument("-m MODEL.gguf is required");
  if (o.engine.speculation.draft_min > o.engine.speculation.draft_max)
    throw std::invalid_argument("--draft-min (" + std::to_string(o.engine.speculation.draft_min) +
                                ") must not exceed --draft-max (" + std::to_string(o.engine.speculation.draft_max) + ")");
  if (o.engine.slot.batch.n_ubatch > o.engine.slot.batch.n_batch)
    throw std::invalid_argument("--n-ubatch (" + std::to_string(o.engine.slot.batch.n_ubatch) + ") must not exceed --n-batch (" +
                                std::to_string(o.engine.slot.batch.n_batch) + ")");
  return o;
}

std::string server_usage() {
  return R"(usage: tandem-server -m MODEL.gguf [options]

OpenAI-compatible (/v1/chat/completions) and llama.cpp-compatible (/completion) HTTP server.

  -m, --model FILE             qwen35 GGUF model (required)
  --host ADDR                  listen address (default 127.0.0.1)
  --port N                     port (default 8080; 0 = pick a free one and print it)
  --api-key KEY                require "Authorization: Bearer KEY" on everything but /health
  --alias NAME                 also accept NAME as the request's "model" (repeatable)
  -c, --ctx-size N             context per slot in tokens (default 4096)
  -np, --parallel N            slots (default 1)
  --queue N                    requests that may wait for a slot; beyond: 503 (default 64)
  --timeout-ms N               per-request deadline from arrival, 0 = none (default 0);
                               a request's "timeout_ms" overrides it
  --ctx-checkpoints N          checkpoints per slot (default 8)
  --cache-ram MIB              host prompt cache budget, 0 = off (default 512)
  --checkpoint-policy P        stock | marconi | divergence (default divergence)
  --min-gap N                  divergence: least L - R for a divergence checkpoint (default 8)
  --consolidate-batches on|off one tail cut at N - n_ubatch instead of two (default on)
  -b, --n-batch N              logical batch (default 2048)
  -ub, --n-ubatch N            micro-batch = one pass (default 512)
  -t, --threads N              compute threads (default: one per physical core)
  --http-threads N             HTTP worker threads (default: parallel + queue + 8)
  --idle-release-ms N          release compute resources after N ms idle, 0 = never (default 3000)
  --cpu-dma-latency            while active, hold a /dev/cpu_dma_latency request (no deep C-states)
                               when that device is writable; closed on release (default off)
  --log-requests FILE          append one JSON line per request (all serving numbers, token ids)
  --cpu-path T                 kernel tier: scalar | avx2 | avx512 | amx (default: the best available)
  --spec on|off                speculative decoding with the model's MTP head (default off; output
                               unchanged, docs/speculation.md)
  --draft-max N                drafts per step, k (default 3); also the tokens every prompt
                               pass runs per token at its end, speculation on or off
  --draft-min N                fewer drafts than this: a plain step (default 0)
  --draft-p-min P              stop drafting below this draft probability (default 0)
  --spec-rollback-aware on|off prompt passes keep k+1 states with a per-token tail only (default on;
                               off: the stock way, the whole pass per token)
  --spec-column-shared on|off  verify all drafts in one column-shared pass (default on)
  --spec-trimmed-head on|off   draft over the file's trimmed draft head when present (default on)
  --spec-rollback replay|copy  rejected drafts: recompute the state from the verify pass's replay
                               log (default replay) or copy one of k states it saved
  -h, --help                   this text

Endpoints: POST /v1/chat/completions, POST /completion, GET /health, GET /slots, GET /metrics,
GET|POST /props, GET /v1/models, POST /tokenize, POST /detokenize (docs/http.md).
)";
}

}  // namespace tandem::http
