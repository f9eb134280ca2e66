#include "serve/meter/request_stats.h"

namespace tandem::serve {

bool RequestStats::same_counts(const RequestStats& o) const {
  return n_prompt == o.n_prompt && lcp == o.lcp && restore_pos == o.restore_pos && new_tokens == o.new_tokens &&
         kv_bound == o.kv_bound && passes == o.passes && pass_sizes == o.pass_sizes &&
         checkpoints_restored == o.checkpoints_restored && checkpoints_created == o.checkpoints_created &&
         checkpoints_evicted == o.checkpoints_evicted && checkpoints_dropped == o.checkpoints_dropped &&
         restored_pos == o.restored_pos && created_positions == o.created_positions &&
         evicted_positions == o.evicted_positions && dropped_positions == o.dropped_positions &&
         checkpoints_held == o.checkpoints_held && checkpoint_bytes_held == o.checkpoint_bytes_held &&
         bytes_copied == o.bytes_copied && prompt_cache_saved == o.prompt_cache_saved &&
         prompt_cache_loaded == o.prompt_cache_loaded && prompt_cache_bytes == o.prompt_cache_bytes &&
         prompt_cache_entries == o.prompt_cache_entries && tokens_generated == o.tokens_generated &&
         drafts_proposed == o.drafts_proposed && drafts_accepted == o.drafts_accepted &&
         verify_passes == o.verify_passes && roll_backs == o.roll_backs && step_drafted == o.step_drafted &&
         step_accepted == o.step_accepted && images == o.images && image_rows == o.image_rows &&
         image_rows_prefilled == o.image_rows_prefilled;
}

// One list of fields for both directions keeps the JSON names and the struct in step.
#define TANDEM_STATS_FIELDS(X)                                                                                     \
  X(request) X(policy) X(consolidate) X(n_prompt) X(lcp) X(restore_pos) X(new_tokens) X(kv_bound) X(passes)      \
  X(pass_sizes) X(checkpoints_restored) X(checkpoints_created) X(checkpoints_evicted) X(checkpoints_dropped)      \
  X(restored_pos) X(created_positions) X(evicted_positions) X(dropped_positions) X(checkpoints_held)              \
  X(checkpoint_bytes_held) X(bytes_copied) X(prompt_cache_saved) X(prompt_cache_loaded) X(prompt_cache_bytes)    \
  X(prompt_cache_budget_bytes) X(prompt_cache_entries) X(prefill_ms) X(decode_ms) X(tokens_generated)            \
  X(ms_per_output_token) X(drafts_proposed) X(drafts_accepted) X(verify_passes) X(roll_backs) X(step_drafted)     \
  X(step_accepted) X(drafts_forced) X(drafts_mtp) X(drafts_forced_accepted) X(mtp_first_drafts)               \
  X(mtp_first_accepted) X(grammar_ms)                                                                         \
  X(images) X(image_rows) X(image_rows_prefilled) X(images_encoded) X(encoder_cache_hits) X(image_rows_ms) X(encoder_ms)

void to_json(nlohmann::json& j, const RequestStats& s) {
  j = nlohmann::json::object();
#define X(f) j[#f] = s.f;
  TANDEM_STATS_FIELDS(X)
#undef X
  j["cpu_ms"] = s.cpu_ms;
  j["energy_j"] = s.energy_j ? nlohmann::json(*s.energy_j) : nlohmann::json(nullptr);  // null: no RAPL
}

void from_json(const nlohmann::json& j, RequestStats& s) {
  // Missing fields keep their defaults (older logs, or a server without speculation).
#define X(f) \
  if (j.contains(#f)) j.at(#f).get_to(s.f);
  TANDEM_STATS_FIELDS(X)
#undef X
  if (j.contains("cpu_ms")) j.at("cpu_ms").get_to(s.cpu_ms);
  s.energy_j.reset();
  if (j.contains("energy_j") && !j.at("energy_j").is_null()) s.energy_j = j.at("energy_j").get<double>();
}

void StatsSummary::add(const RequestStats& s) {
  ++requests;
  new_tokens += s.new_tokens;
  kv_bound += s.kv_bound;
  passes += s.passes;
  checkpoints_created += s.checkpoints_created;
  checkpoints_restored += s.checkpoints_restored;
  checkpoints_evicted += s.checkpoints_evicted;
  bytes_copied += s.bytes_copied;
  prefill_ms += s.prefill_ms;
  decode_ms += s.decode_ms;
  tokens_generated += s.tokens_generated;
}

void to_json(nlohmann::json& j, const StatsSummary& s) {
  const double n = s.requests > 0 ? static_cast<double>(s.requests) : 1.0;
  j = {{"requests", s.requests},
       {"new_tokens", s.new_tokens},
       {"kv_bound", s.kv_bound},
       {"passes", s.passes},
       {"checkpoints_created", s.checkpoints_created},
       {"checkpoints_restored", s.checkpoints_restored},
       {"checkpoints_evicted", s.checkpoints_evicted},
       {"bytes_copied", s.bytes_copied},
       {"prefill_ms", s.prefill_ms},
       {"decode_ms", s.decode_ms},
       {"tokens_generated", s.tokens_generated},
       {"mean_new_tokens", static_cast<double>(s.new_tokens) / n},
       {"mean_kv_bound", static_cast<double>(s.kv_bound) / n},
       {"mean_passes", static_cast<double>(s.passes) / n}};
}

}  // namespace tandem::serve
