// The replay model of serving spec §6: serve/'s own Slot, checkpoint policies, batch planner and
// prompt cache run over a trace's token streams through the NullBackend dry run. It predicts, per
// request, N - R, passes and every other count of spec §5 for a server configuration, without
// running the network; with a calibrated cost model (prefill ≈ a·tokens + b·passes + c·copies) it
// turns the counts into predicted latencies and sweeps settings in seconds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/qwen35_hparams.h"
#include "serve/policy_factory.h"
#include "serve/recorded_request.h"
#include "serve/request_stats.h"
#include "serve/slot.h"

namespace tandem::agent {

// The serving settings that change counts: what tandem-server's flags set, with its defaults
// (divergence, min-gap 8, consolidation on, 8 checkpoints, 512 MiB prompt cache, 4096 tokens).
struct ServeSettings {
  ServeSettings() { slot.batch.consolidate = true; }
  std::string name;
  serve::PolicyConfig policy;
  serve::SlotConfig slot;
  size_t cache_ram_mib = 512;  // host prompt cache; 0: none
  int64_t n_ctx = 4096;        // KV rows of the slot
};

// Parses a server command line's count-relevant flags, with tandem-server's (and llama.cpp's)
// names: --checkpoint-policy P, --consolidate-batches on|off, --min-gap N, --ctx-checkpoints N,
// --cache-ram MiB, -c/--ctx-size N, -b/--n-batch N, -ub/--n-ubatch N. Flags that do not change
// counts (-m, --host, --port, -t, --log-requests, ...) are skipped with their value. Throws
// std::invalid_argument for anything else (and for --parallel above 1: the model is one slot).
ServeSettings parse_serve_flags(const std::vector<std::string>& args, ServeSettings base = {});
// "name: flags" (the replay's --config syntax); the name defaults to the flags.
ServeSettings parse_config(const std::string& spec, ServeSettings base = {});
std::vector<std::string> split_args(const std::string& s);
// A short description: "divergence min_gap=8 consolidate ckpt=8 cache=512MiB".
std::string describe(const ServeSettings& s);

// Replays the requests on a fresh dry-run slot of this model's shapes (the model's checkpoint and
// KV byte sizes, so prompt-cache budgets behave as on the server). Marconi's FLOP model is the
// model's.
std::vector<serve::RequestStats> simulate(std::span<const serve::RecordedRequest> requests,
                                          const ServeSettings& settings, const Qwen35HParams& hp);

// Prefill cost of one request on this machine.
struct CostModel {
  double ms_per_token = 0;     // a
  double ms_per_pass = 0;      // b
  double ms_per_copy = 0;      // c: one checkpoint save or restore
  double ms_per_output_token = 0;  // decode, for step latency
  std::string note;

  // copies = checkpoints created + restored
  double prefill_ms(const serve::RequestStats& s) const;
  double step_ms(const serve::RequestStats& s) const;  // prefill + tokens_generated decode steps
};
void to_json(nlohmann::json& j, const CostModel& c);
void from_json(const nlohmann::json& j, CostModel& c);
// "a,b,c[,d]" or a JSON file written by `tandem-sim calibrate`.
CostModel parse_cost_model(const std::string& spec);

// One timed prefill: what calibration measures.
struct CostSample {
  double tokens = 0, passes = 0, copies = 0;
  double ms = 0;
};
// Least squares of ms ≈ a·tokens + b·passes + c·copies (no intercept). Throws std::invalid_argument
// when the samples do not determine the three coefficients.
CostModel fit_cost_model(std::span<const CostSample> samples);

}  // namespace tandem::agent
