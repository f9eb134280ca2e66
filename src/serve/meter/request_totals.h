// Sums of every per-request number of serving.md §5 over a server's life (what /metrics exports
// as counters). Means follow from a sum and `requests`.
#pragma once

#include <cstdint>

#include "serve/meter/request_stats.h"

namespace tandem::serve {

struct RequestTotals {
  uint64_t requests = 0;  // requests that reached a slot (prefill ran or was attempted)
  int64_t n_prompt = 0, lcp = 0, restore_pos = 0, new_tokens = 0, kv_bound = 0;
  int64_t passes = 0;
  int64_t checkpoints_restored = 0, checkpoints_created = 0, checkpoints_evicted = 0, checkpoints_dropped = 0;
  uint64_t bytes_copied = 0;
  uint64_t prompt_cache_saves = 0, prompt_cache_loads = 0;
  double prefill_ms = 0, decode_ms = 0;
  int64_t tokens_generated = 0;  // tokens fed back through decode (RequestStats::tokens_generated)
  int64_t drafts_proposed = 0, drafts_accepted = 0, verify_passes = 0, roll_backs = 0;
  int64_t drafts_forced = 0, drafts_mtp = 0, drafts_forced_accepted = 0;
  double grammar_ms = 0;
  int64_t images = 0, image_rows = 0, image_rows_prefilled = 0, images_encoded = 0, encoder_cache_hits = 0;
  double encoder_ms = 0;
  double cpu_ms = 0;            // compute threads' CPU time of the requests
  double energy_j = 0;          // package energy of the requests that had a figure
  int64_t energy_requests = 0;  // those requests

  void add(const RequestStats& s) {
    ++requests;
    n_prompt += s.n_prompt;
    lcp += s.lcp;
    restore_pos += s.restore_pos;
    new_tokens += s.new_tokens;
    kv_bound += s.kv_bound;
    passes += s.passes;
    checkpoints_restored += s.checkpoints_restored;
    checkpoints_created += s.checkpoints_created;
    checkpoints_evicted += s.checkpoints_evicted;
    checkpoints_dropped += s.checkpoints_dropped;
    bytes_copied += s.bytes_copied;
    prompt_cache_saves += s.prompt_cache_saved ? 1 : 0;
    prompt_cache_loads += s.prompt_cache_loaded ? 1 : 0;
    prefill_ms += s.prefill_ms;
    decode_ms += s.decode_ms;
    tokens_generated += s.tokens_generated;
    drafts_proposed += s.drafts_proposed;
    drafts_accepted += s.drafts_accepted;
    verify_passes += s.verify_passes;
    roll_backs += s.roll_backs;
    drafts_forced += s.drafts_forced;
    drafts_mtp += s.drafts_mtp;
    drafts_forced_accepted += s.drafts_forced_accepted;
    grammar_ms += s.grammar_ms;
    images += s.images;
    image_rows += s.image_rows;
    image_rows_prefilled += s.image_rows_prefilled;
    images_encoded += s.images_encoded;
    encoder_cache_hits += s.encoder_cache_hits;
    encoder_ms += s.encoder_ms;
    cpu_ms += s.cpu_ms;
    if (s.energy_j) {
      energy_j += *s.energy_j;
      ++energy_requests;
    }
  }
};

}  // namespace tandem::serve
