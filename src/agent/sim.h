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

#include "model/model_shape.h"
#include "serve/backend/recorded_request.h"
#include "serve/engine/engine.h"
#include "serve/meter/request_stats.h"
#include "serve/policy/policy_factory.h"
#include "serve/slot/slot.h"

namespace tandem::agent {

// A server configuration: the EngineConfig tandem-server would run (its defaults: divergence,
// min-gap 8, consolidation on, 8 checkpoints, 512 MiB prompt cache, 4096 tokens, speculation off;
// every default is EngineConfig's own), plus a name for tables. simulate() reads the settings that
// change counts (serve::serving_settings(): those marked changes_counts), speculation included.
struct ServeSettings : serve::EngineConfig {
  std::string name;
};

// Parses a tandem-server command line with the server's own tables (serve::serving_settings() and
// serve::front_end_settings()): a serving setting that changes counts is applied exactly as the
// server applies it (same range checks and messages; --spec and the other speculation flags
// included; and --encoder-cache, for predict_encoder); the server's other flags (-m, --host, --port, -t, --log-requests, --queue,
// --timeout-ms, ...) are skipped with their value, and so are --verbose / -v. Throws
// std::invalid_argument for anything else and for the server's cross-flag checks (--n-ubatch above
// --n-batch, --draft-min above --draft-max). --parallel N: N slots sharing the prompt cache, the
// requests sent one at a time, each to the slot the engine picks (the longest common prefix).
ServeSettings parse_serve_flags(const std::vector<std::string>& args, ServeSettings base = {});
// "name: flags" (the replay's --config syntax); the name defaults to the flags.
ServeSettings parse_config(const std::string& spec, ServeSettings base = {});
std::vector<std::string> split_args(const std::string& s);
// A short description: "divergence min_gap=8 consolidate ckpt=8 cache=512MiB" (then " spec k=3"
// when speculation is on, and the ablations switched off).
std::string describe(const ServeSettings& s);

// Replays the requests on a fresh dry-run slot of this model's shapes (the model's checkpoint and
// KV byte sizes, so prompt-cache budgets behave as on the server). Marconi's FLOP model is the
// model's. Image requests also get the engine's encoder work (predict_encoder).
std::vector<serve::RequestStats> simulate(std::span<const serve::RecordedRequest> requests,
                                          const ServeSettings& settings, const ModelShape& shape);

// The engine's vision encoder over the replayed requests (issue 26): an image is fetched when a
// prefill pass needs its rows (any of them at or after the request's restore position R); it is
// then found in the encoder cache (serve::EncoderCache, --encoder-cache MiB, rows of the text
// model's width) or encoded and inserted. Sets images_encoded and encoder_cache_hits (counts the
// server logs but RequestStats::same_counts leaves out).
void predict_encoder(std::span<const serve::RecordedRequest> requests, std::vector<serve::RequestStats>& stats,
                     const ServeSettings& settings, const ModelShape& shape);

// Prefill cost of one request on this machine.
struct CostModel {
  double ms_per_token = 0;     // a
  double ms_per_pass = 0;      // b
  double ms_per_copy = 0;      // c: one checkpoint save or restore
  double ms_per_output_token = 0;  // d: a plain decode step, for step latency
  // Speculation (calibrated on a model with an MTP head; empty otherwise): one draft (the MTP
  // head and the matrix it drafts through, the trimmed head when the file has one), and one
  // verification pass over the last token and k drafts, ms_per_verify[k - 1].
  double ms_per_draft = 0;
  std::vector<double> ms_per_verify;
  std::string note;

  bool has_spec() const { return !ms_per_verify.empty(); }
  // copies = checkpoints created + restored
  double prefill_ms(const serve::RequestStats& s) const;
  // prefill + the decode side: tokens_generated plain decode steps, or, when the request's log
  // holds its speculation steps (step_drafted / step_accepted) and the model has spec costs, what
  // those steps cost: a step with n drafts costs n drafts and a verify pass of 1 + n, a step
  // without drafts a plain decode step.
  double step_ms(const serve::RequestStats& s) const;
  double decode_ms(const serve::RequestStats& s) const;
  // The expected decode side of an answer of `tokens` tokens (the first from the prompt pass)
  // under speculation with k drafts a step, each accepted with probability p until the first
  // rejection: a step costs k drafts and a verify pass of 1 + k and emits 1 + p + ... + p^k
  // tokens on average. k = 0: plain decoding.
  double expected_decode_ms(double tokens, int k, double p) const;
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
