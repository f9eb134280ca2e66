#include "http/routes/metrics_text.h"

#include "http/transport/transport.h"

#include <cstdio>
#include <sstream>

namespace tandem::http {

namespace {

class Writer {
 public:
  // One HELP/TYPE header per family.
  void family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << '\n' << "# TYPE " << name << ' ' << type << '\n';
  }
  void sample(const char* name, double v, const std::string& labels = {}) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ << name;
    if (!labels.empty()) out_ << '{' << labels << '}';
    out_ << ' ' << buf << '\n';
  }
  void one(const char* name, const char* type, const char* help, double v) {
    family(name, type, help);
    sample(name, v);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string slot_label(int id) { return "slot=\"" + std::to_string(id) + "\""; }

}  // namespace

std::string prometheus_text(const serve::EngineSnapshot& s) {
  Writer w;
  const serve::RequestTotals& t = s.totals;
  const auto d = [](auto v) { return static_cast<double>(v); };

  // Request outcomes.
  w.one("tandem_requests_submitted_total", "counter", "Requests accepted into the queue.", d(s.submitted));
  w.one("tandem_requests_rejected_total", "counter", "Requests refused with 503 (all slots busy, queue full).", d(s.rejected));
  w.family("tandem_requests_finished_total", "counter", "Finished requests by outcome.");
  w.sample("tandem_requests_finished_total", d(s.completed), "outcome=\"completed\"");
  w.sample("tandem_requests_finished_total", d(s.cancelled), "outcome=\"cancelled\"");
  w.sample("tandem_requests_finished_total", d(s.timed_out), "outcome=\"timeout\"");
  w.sample("tandem_requests_finished_total", d(s.failed), "outcome=\"error\"");
  w.one("tandem_output_tokens_total", "counter", "Tokens sampled for all requests.", d(s.sampled_tokens));
  // The watchdog (serve/lifecycle/watchdog.h).
  const serve::WatchdogStatus& wd = s.watchdog;
  w.one("tandem_watchdog_deadline_seconds", "gauge", "Base deadline of a pass, encode or step (0: watchdog off).",
        wd.enabled ? d(wd.config.deadline_ms) / 1000.0 : 0.0);
  w.one("tandem_watchdog_trips_total", "counter", "Work that passed the watchdog's deadline.", d(wd.trips));
  w.one("tandem_watchdog_requests_failed_total", "counter", "Requests the watchdog failed.", d(wd.requests_failed));
  w.one("tandem_watchdog_tripped", "gauge", "1 while the watchdog has tripped (requests refused; exiting or waiting).",
        wd.tripped ? 1.0 : 0.0);

  // serving.md §5, summed over the requests that ran on a slot.
  w.one("tandem_request_count_total", "counter", "Requests that ran on a slot (the denominator of the sums below).", d(t.requests));
  w.one("tandem_request_prompt_tokens_total", "counter", "Sum of N (prompt tokens).", d(t.n_prompt));
  w.one("tandem_request_lcp_tokens_total", "counter", "Sum of L (common prefix with the slot's cached tokens).", d(t.lcp));
  w.one("tandem_request_restore_pos_tokens_total", "counter", "Sum of R (position prefill resumed from).", d(t.restore_pos));
  w.one("tandem_request_new_tokens_total", "counter", "Sum of N - R (prompt tokens prefilled).", d(t.new_tokens));
  w.one("tandem_request_kv_bound_tokens_total", "counter", "Sum of N - L (what pure attention would prefill).", d(t.kv_bound));
  w.one("tandem_request_passes_total", "counter", "Model passes (micro-batches) of prefills.", d(t.passes));
  w.one("tandem_request_checkpoints_restored_total", "counter", "Checkpoints restored.", d(t.checkpoints_restored));
  w.one("tandem_request_checkpoints_created_total", "counter", "Checkpoints created.", d(t.checkpoints_created));
  w.one("tandem_request_checkpoints_evicted_total", "counter", "Checkpoints evicted (capacity or thinning).", d(t.checkpoints_evicted));
  w.one("tandem_request_checkpoints_dropped_total", "counter", "Checkpoints dropped (beyond R after a restore).", d(t.checkpoints_dropped));
  w.one("tandem_request_bytes_copied_total", "counter", "State bytes copied (checkpoints, prompt cache).", d(t.bytes_copied));
  w.one("tandem_request_prompt_cache_saves_total", "counter", "Requests that saved the slot into the prompt cache.", d(t.prompt_cache_saves));
  w.one("tandem_request_prompt_cache_loads_total", "counter", "Requests that loaded a prompt-cache entry.", d(t.prompt_cache_loads));
  w.one("tandem_request_prefill_seconds_total", "counter", "Prefill time (restore + passes + copies).", t.prefill_ms / 1000.0);
  w.one("tandem_request_decode_seconds_total", "counter", "Decode time (model calls of generated tokens).", t.decode_ms / 1000.0);
  w.one("tandem_request_tokens_generated_total", "counter", "Generated tokens fed back through decode.", d(t.tokens_generated));
  w.one("tandem_request_ms_per_output_token", "gauge", "Mean decode ms per generated token over all requests.",
        t.tokens_generated > 0 ? t.decode_ms / d(t.tokens_generated) : 0.0);
  w.one("tandem_request_drafts_proposed_total", "counter", "Speculative drafts proposed.", d(t.drafts_proposed));
  w.one("tandem_request_drafts_accepted_total", "counter", "Speculative drafts accepted.", d(t.drafts_accepted));
  w.one("tandem_request_verify_passes_total", "counter", "Trunk passes that verified drafts.", d(t.verify_passes));
  w.one("tandem_request_roll_backs_total", "counter", "Roll-backs inside verification passes (a draft rejected).",
        d(t.roll_backs));
  w.one("tandem_request_drafts_forced_total", "counter", "Drafts a request's grammar forced (no MTP call).",
        d(t.drafts_forced));
  w.one("tandem_request_drafts_mtp_total", "counter", "Drafts the MTP head proposed.", d(t.drafts_mtp));
  w.one("tandem_request_drafts_forced_accepted_total", "counter", "Forced drafts accepted.", d(t.drafts_forced_accepted));
  w.one("tandem_request_grammar_seconds_total", "counter", "Grammar work of constrained requests (masks, checks).",
        t.grammar_ms / 1000.0);

  // Constrained decoding.
  w.one("tandem_grammar_requests_total", "counter", "Requests with a grammar, JSON schema or response format.",
        d(s.grammar_requests));
  w.one("tandem_grammar_cache_entries", "gauge", "Compiled grammars cached.", d(s.grammar_cache.entries));
  w.one("tandem_grammar_cache_bytes", "gauge", "Bytes of the cached grammars (states, masks, forced runs).",
        d(s.grammar_cache.bytes));
  w.one("tandem_grammar_cache_budget_bytes", "gauge", "Grammar cache budget (--grammar-cache).", d(s.grammar_cache.budget_bytes));
  w.one("tandem_grammar_cache_hits_total", "counter", "Grammar requests that found their grammar compiled.",
        d(s.grammar_cache.hits));
  w.one("tandem_grammar_cache_misses_total", "counter", "Grammar requests that compiled their grammar.",
        d(s.grammar_cache.misses));

  // Images (--mmproj): rows prefilled or reused, encoder runs and time, the encoder cache.
  w.one("tandem_vision", "gauge", "1 when the server encodes images (--mmproj).", d(s.vision ? 1 : 0));
  w.one("tandem_request_images_total", "counter", "Images in requests' prompts.", d(t.images));
  w.one("tandem_request_image_rows_total", "counter", "Image rows (tokens) in requests' prompts.", d(t.image_rows));
  w.one("tandem_request_image_rows_prefilled_total", "counter", "Image rows run through the model.",
        d(t.image_rows_prefilled));
  w.one("tandem_request_image_rows_reused_total", "counter", "Image rows reused from a restored state.",
        d(t.image_rows - t.image_rows_prefilled));
  w.one("tandem_request_images_encoded_total", "counter", "Vision encoder runs.", d(t.images_encoded));
  w.one("tandem_request_encoder_seconds_total", "counter", "Time in the vision encoder.", t.encoder_ms / 1000.0);
  w.one("tandem_encoder_cache_hits_total", "counter", "Images whose rows came from the encoder cache.",
        d(s.encoder_cache.hits));
  w.one("tandem_encoder_cache_misses_total", "counter", "Images looked up and not found in the encoder cache.",
        d(s.encoder_cache.misses));
  w.one("tandem_encoder_cache_evictions_total", "counter", "Encoded images dropped for the budget.",
        d(s.encoder_cache.evictions));
  w.one("tandem_encoder_cache_entries", "gauge", "Encoded images held.", d(s.encoder_cache.entries));
  w.one("tandem_encoder_cache_bytes", "gauge", "Bytes of the encoded images held.", d(s.encoder_cache.bytes));
  w.one("tandem_encoder_cache_budget_bytes", "gauge", "Encoder cache budget (--encoder-cache).",
        d(s.encoder_cache.budget_bytes));

  // Queue and slots.
  w.one("tandem_queue_waiting", "gauge", "Requests waiting for a slot.", d(s.queued));
  w.one("tandem_queue_capacity", "gauge", "Requests that may wait (--queue).", d(s.queue_max));
  w.one("tandem_slots", "gauge", "Slots (--parallel).", d(s.slots.size()));
  w.family("tandem_slot_state", "gauge", "1 for the state each slot is in.");
  for (const auto& sl : s.slots)
    for (auto ph : {serve::SlotPhase::Idle, serve::SlotPhase::Prefill, serve::SlotPhase::Generating})
      w.sample("tandem_slot_state", sl.phase == ph ? 1 : 0,
               slot_label(sl.id) + ",state=\"" + std::string(serve::to_string(ph)) + "\"");
  w.family("tandem_slot_cached_tokens", "gauge", "Tokens the slot's state holds.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_cached_tokens", d(sl.n_cached), slot_label(sl.id));
  w.family("tandem_slot_checkpoints", "gauge", "Checkpoints held by the slot.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_checkpoints", d(sl.checkpoint_positions.size()), slot_label(sl.id));
  w.family("tandem_slot_checkpoint_bytes", "gauge", "Bytes of the checkpoints held by the slot.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_checkpoint_bytes", d(sl.checkpoint_bytes), slot_label(sl.id));
  w.family("tandem_slot_kv_bytes", "gauge", "KV cache bytes allocated for the slot.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_kv_bytes", d(sl.kv_bytes), slot_label(sl.id));
  w.family("tandem_slot_recurrent_bytes", "gauge", "Live recurrent state bytes of the slot.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_recurrent_bytes", d(sl.recurrent_bytes), slot_label(sl.id));
  w.family("tandem_slot_speculation_bytes", "gauge",
           "Bytes held by the slot's speculator: MTP KV cache, hidden record, verification buffers (0: off).");
  for (const auto& sl : s.slots) w.sample("tandem_slot_speculation_bytes", d(sl.speculation_bytes), slot_label(sl.id));
  w.family("tandem_slot_requests_total", "counter", "Requests the slot has served.");
  for (const auto& sl : s.slots) w.sample("tandem_slot_requests_total", d(sl.requests), slot_label(sl.id));

  size_t kv = 0, rec = 0, cp = 0, spec = 0;
  for (const auto& sl : s.slots) {
    kv += sl.kv_bytes;
    rec += sl.recurrent_bytes;
    cp += sl.checkpoint_bytes;
    spec += sl.speculation_bytes;
  }
  w.one("tandem_kv_bytes", "gauge", "KV cache bytes of all slots.", d(kv));
  w.one("tandem_recurrent_bytes", "gauge", "Live recurrent state bytes of all slots.", d(rec));
  w.one("tandem_checkpoint_bytes", "gauge", "Checkpoint bytes of all slots.", d(cp));
  w.one("tandem_speculation_bytes", "gauge", "Speculator bytes of all slots.", d(spec));
  w.one("tandem_prompt_cache_bytes", "gauge", "Prompt-cache bytes in use.", d(s.prompt_cache_bytes));
  w.one("tandem_prompt_cache_budget_bytes", "gauge", "Prompt-cache budget (--cache-ram).", d(s.prompt_cache_budget_bytes));
  w.one("tandem_prompt_cache_entries", "gauge", "Prompt-cache entries.", d(s.prompt_cache_entries));

  w.one("tandem_model_packed_weight_bytes", "gauge",
        "Bytes of the weights' 16-row tile-order copies made at load on AVX-512 VNNI / AMX machines (their mmap'd rows leave the resident set).",
        d(s.packed_weight_bytes));
  // Resource governor (idle release).
  const GovernorStats& g = s.governor;
  w.one("tandem_governor_releases_total", "counter", "Times compute resources were released after idling.", d(g.releases));
  w.one("tandem_governor_reacquires_total", "counter", "Times released resources were acquired again.", d(g.reacquires));
  w.one("tandem_governor_released_seconds_total", "counter", "Seconds spent released.", g.seconds_released);
  w.one("tandem_governor_last_wake_latency_ms", "gauge", "Time the last re-acquire took.", g.last_wake_latency_ms);
  w.one("tandem_governor_max_wake_latency_ms", "gauge", "Longest re-acquire.", g.max_wake_latency_ms);
  w.one("tandem_governor_released", "gauge", "1 while resources are released.", g.released ? 1 : 0);

  // Lifecycle: unloading after --unload-idle-s, the state directory (serve/engine/engine_lifecycle.cpp).
  const serve::LifecycleStats& L = s.lifecycle;
  w.one("tandem_model_loaded", "gauge", "1 while the weights are loaded (0 after an idle unload).", L.weights_loaded ? 1 : 0);
  w.one("tandem_model_unloads_total", "counter", "Idle unloads of the weights (--unload-idle-s).", d(L.unloads));
  w.one("tandem_model_reloads_total", "counter", "Reloads of the weights for a request after an unload.", d(L.reloads));
  w.one("tandem_model_cold_start_ms", "gauge", "The last reload, whole: mapping, packing, state files.", L.cold_start_ms);
  w.one("tandem_model_cold_start_map_ms", "gauge", "The last reload: opening, checking and binding the file.", L.cold_map_ms);
  w.one("tandem_model_cold_start_pack_ms", "gauge", "The last reload: packing the matrix path's copies.", L.cold_pack_ms);
  w.one("tandem_model_cold_start_states_ms", "gauge", "The last reload: loading the state directory.", L.cold_states_ms);
  w.one("tandem_state_files_written_total", "counter", "State files written to --state-dir.", d(L.state_files_written));
  w.one("tandem_state_files_loaded_total", "counter", "State files loaded from --state-dir.", d(L.state_files_loaded));
  w.one("tandem_state_files_refused_total", "counter",
        "State files refused (another model or layout, truncated, corrupted) or not written.", d(L.state_files_refused));
  w.one("tandem_state_bytes_written_total", "counter", "Bytes of state files written.", d(L.state_bytes_written));
  w.one("tandem_state_bytes_loaded_total", "counter", "Bytes of state files loaded.", d(L.state_bytes_loaded));
  // Energy figures (issue 27; serve/meter/compute_meter.h). Package energy is exported only where RAPL
  // is readable: an absent series, not a 0, where it is not (tandem_energy_available says which,
  // GET /props why).
  const serve::EnergyFigures& e = s.energy;
  w.one("tandem_request_cpu_seconds_total", "counter",
        "CPU time of the compute threads (scheduler and pool workers) over the requests' steps.", t.cpu_ms / 1000.0);
  w.one("tandem_compute_cpu_seconds_total", "counter",
        "CPU time of the compute threads since the engine started, idle and between steps included.",
        e.compute_cpu_seconds);
  w.one("tandem_process_cpu_seconds_total", "counter", "Total user and system CPU time of the process (every thread).",
        e.process_cpu_seconds);
  w.one("tandem_energy_available", "gauge", "1 when RAPL package energy is readable (the energy series exist).",
        e.package_joules ? 1 : 0);
  if (e.package_joules) {
    w.one("tandem_package_energy_joules_total", "counter",
          "RAPL package energy since the engine started, machine-wide (other processes included).", *e.package_joules);
    w.one("tandem_request_energy_joules_total", "counter",
          "RAPL package energy (machine-wide) while the requests' steps ran.", t.energy_j);
    w.one("tandem_request_energy_requests_total", "counter", "Requests with an energy figure (the sum's denominator).",
          d(t.energy_requests));
  }

  // Current switches.
  w.family("tandem_config_info", "gauge", "The serving configuration now in force (labels).");
  w.sample("tandem_config_info", 1,
           "checkpoint_policy=\"" + std::string(serve::to_string(s.policy)) + "\",consolidate=\"" +
               (s.consolidate ? "on" : "off") + "\"");
  w.one("tandem_config_ctx_checkpoints", "gauge", "Checkpoint capacity per slot.", d(s.ctx_checkpoints));
  w.one("tandem_config_min_gap", "gauge", "Divergence policy's min_gap.", d(s.min_gap));
  return w.str();
}

std::string process_metrics_text(const TransportStats* t, size_t rss_bytes, size_t tokenizer_scratch_bytes) {
  Writer w;
  const auto d = [](auto v) { return static_cast<double>(v); };
  w.one("tandem_process_resident_bytes", "gauge", "Resident set size of the process (/proc/self/statm).", d(rss_bytes));
  w.one("tandem_tokenizer_scratch_bytes", "gauge",
        "Bytes held by the tokenizer's per-thread scratch buffers, all threads (each keeps at most 256 KiB per buffer).",
        d(tokenizer_scratch_bytes));
  if (!t) return w.str();
  w.one("tandem_http_connections_open", "gauge", "Open HTTP connections (reading, idle or being served).",
        d(t->connections_open.load()));
  w.one("tandem_http_connections_accepted_total", "counter", "HTTP connections accepted.", d(t->connections_accepted.load()));
  w.one("tandem_http_connections_refused_total", "counter",
        "Connections refused with 503 at --max-connections while every connection was running a request.",
        d(t->connections_refused.load()));
  w.one("tandem_http_requests_total", "counter", "Complete requests handed to the HTTP workers.", d(t->requests.load()));
  w.one("tandem_http_framing_refused_total", "counter",
        "Requests refused for their framing (malformed head, conflicting lengths, over a size limit).",
        d(t->framing_refused.load()));
  w.one("tandem_http_slow_clients_dropped_total", "counter",
        "Requests dropped because their head and body did not arrive within --request-timeout-s, or evicted as the "
        "slowest at --max-connections.",
        d(t->slow_dropped.load()));
  w.one("tandem_http_buffer_refused_total", "counter", "Requests refused with 503 because --max-buffered-mib was full.",
        d(t->budget_refused.load()));
  w.one("tandem_http_buffered_bytes", "gauge", "Request bytes held now (heads and bodies not yet answered).",
        d(t->buffered_bytes.load()));
  w.one("tandem_http_buffered_peak_bytes", "gauge", "The most request bytes held at once since start.",
        d(t->buffered_peak.load()));
  return w.str();
}

}  // namespace tandem::http
