// GET /metrics: the engine's snapshot in the Prometheus text format (version 0.0.4).
//
// Per-request aggregates of every serving.md §5 number (counters, tandem_request_* ...),
// request outcomes, queue and slot states, prompt-cache bytes used / budget, KV and recurrent
// bytes, and the resource governor's releases / re-acquires / seconds released / wake latency.
// docs/http.md lists every name.
#pragma once

#include <string>

#include "serve/engine/engine.h"

namespace tandem::http {

std::string prometheus_text(const serve::EngineSnapshot& s);

// The front end's own figures (issue 51): connections and refusals of the transport
// (http/transport/transport.h; null before the server starts), the process's resident set and the bytes the
// tokenizer's per-thread scratch holds (text/scratch.h).
struct TransportStats;
std::string process_metrics_text(const TransportStats* t, size_t rss_bytes, size_t tokenizer_scratch_bytes);

}  // namespace tandem::http
