// What every request reports (serving.md §5), so that a replay can be checked number by
// number against the server: the same struct is filled by the server's slot and by the
// dry-run slot of the simulator.
//
// Definitions: N = prompt tokens; L = longest common prefix with the slot's cached tokens
// (after a prompt-cache load); R = the position prefill resumed from; new_tokens = N - R (what
// was prefilled); kv_bound = N - L (what a pure attention model would prefill); passes = model
// traversals of the prefill (micro-batches); checkpoints restored / created / evicted (by
// capacity or thinning) / dropped (invalidated by the restore: beyond R); bytes_copied = every
// state copy of the request (checkpoint saves and restores, prompt-cache saves and loads).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::serve {

struct RequestStats {
  uint64_t request = 0;  // index in the slot's life, from 1
  std::string policy;
  bool consolidate = false;

  int64_t n_prompt = 0;    // N
  int64_t lcp = 0;         // L
  int64_t restore_pos = 0; // R
  int64_t new_tokens = 0;  // N - R
  int64_t kv_bound = 0;    // N - L

  int64_t passes = 0;
  std::vector<int64_t> pass_sizes;

  int64_t checkpoints_restored = 0;
  int64_t checkpoints_created = 0;
  int64_t checkpoints_evicted = 0;
  int64_t checkpoints_dropped = 0;
  int64_t restored_pos = -1;  // position of the restored checkpoint, -1 when none
  std::vector<int64_t> created_positions, evicted_positions, dropped_positions;
  int64_t checkpoints_held = 0;       // after the prefill
  uint64_t checkpoint_bytes_held = 0; // after the prefill

  uint64_t bytes_copied = 0;

  // Images (issue 26): the prompt's images and their rows, the rows this request ran (the rest
  // were reused from the restored state), and the time spent getting rows for them (encoding,
  // or finding them in the engine's encoder cache).
  int64_t images = 0;
  int64_t image_rows = 0;
  int64_t image_rows_prefilled = 0;
  int64_t images_encoded = 0;     // encoder runs (images not found in the encoder cache)
  int64_t encoder_cache_hits = 0; // images whose rows came from the encoder cache
  double image_rows_ms = 0;       // getting the rows (encode or cache lookup), inside prefill_ms
  double encoder_ms = 0;          // of which the encoder itself

  bool prompt_cache_saved = false;
  bool prompt_cache_loaded = false;
  uint64_t prompt_cache_bytes = 0;         // after this request's cache update
  uint64_t prompt_cache_budget_bytes = 0;
  int64_t prompt_cache_entries = 0;

  double prefill_ms = 0;
  double decode_ms = 0;
  int64_t tokens_generated = 0;
  double ms_per_output_token = 0;

  // Energy figures (issue 27; serve/meter/compute_meter.h): CPU time of the compute threads (the
  // scheduler and the thread pools' workers) over the request's steps, prefill and decode; and
  // the package energy (RAPL) spent meanwhile, machine-wide — nullopt (JSON null) where RAPL is
  // absent or unreadable, never 0. A dry run measures neither (cpu_ms 0, energy_j null).
  double cpu_ms = 0;
  std::optional<double> energy_j;

  // Speculative decoding (Slot::decode_speculative, docs/speculation.md): drafts verified,
  // drafts accepted, trunk passes that verified drafts, and roll-backs inside them (steps that
  // accepted fewer drafts than they verified).
  int64_t drafts_proposed = 0;
  int64_t drafts_accepted = 0;  // both kinds: decode-side passes = tokens sampled - drafts_accepted
  int64_t verify_passes = 0;
  int64_t roll_backs = 0;
  // By source (constrained decoding, spec/constrained.md §6.4): drafts the grammar forced and
  // drafts the MTP head proposed (drafts_proposed = drafts_forced + drafts_mtp), and the forced
  // ones accepted.
  int64_t drafts_forced = 0;
  int64_t drafts_mtp = 0;
  int64_t drafts_forced_accepted = 0;
  // The MTP head's first draft (issue 50's acceptance figure): steps whose drafts began with an
  // MTP draft (a grammar's forced run comes after the MTP drafts of a step, or alone), and of
  // those, the steps whose first draft the target accepted. Independent of draft_max, so it
  // reads the same whatever k the server ran.
  int64_t mtp_first_drafts = 0;
  int64_t mtp_first_accepted = 0;
  // Grammar work on the scheduler thread (masks, forced runs, picks' checks), ms.
  double grammar_ms = 0;
  // Per speculative step, in order (steps without drafts too): drafts verified and accepted. What the drafter
  // proposed and the target accepted depends on the weights, which a dry run does not have: a
  // request log carries these two lists so that the replay model reproduces every other count
  // of a speculating server (serve/backend/dry_run.h).
  std::vector<int32_t> step_drafted, step_accepted;

  // The counts a replay must reproduce exactly (no timings).
  bool same_counts(const RequestStats& o) const;
};

void to_json(nlohmann::json& j, const RequestStats& s);
void from_json(const nlohmann::json& j, RequestStats& s);

// Sums and means over a run (what a replay prints at the end).
struct StatsSummary {
  int64_t requests = 0;
  int64_t new_tokens = 0, kv_bound = 0, passes = 0;
  int64_t checkpoints_created = 0, checkpoints_restored = 0, checkpoints_evicted = 0;
  uint64_t bytes_copied = 0;
  double prefill_ms = 0, decode_ms = 0;
  int64_t tokens_generated = 0;

  void add(const RequestStats& s);
};
void to_json(nlohmann::json& j, const StatsSummary& s);

}  // namespace tandem::serve
