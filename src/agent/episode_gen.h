// Synthetic agent traces with the paper's structure (paper §3, serving spec §1): seeded, built with
// the prompt builder from generated accessibility trees. Default: 21 single screens from 21 apps
// (each with a task and 0-3 earlier actions), then 5 episodes of 8 steps in 5 apps; 61 requests.
// With the Qwen3 tokenizer the parts average about 324 tokens of rules, 49 of task and history
// and 275 of controls (tandem-gen-trace -m MODEL prints the measured numbers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/prompt_builder.h"
#include "agent/trace.h"

namespace tandem::agent {

struct GenOptions {
  uint64_t seed = 1;
  int single_screens = 21;  // at most the number of built-in apps (21)
  int episodes = 5;
  int steps = 8;            // per episode; the last step finishes the task
  PromptLayout layout;
  RequestOptions request;
  double controls_scale = 1.0;  // scales the number of list items per screen
  std::string date = "2026-08-14 09:30";  // first date line (date_first layouts), advances per step
};

struct GeneratedRequest {
  TraceRecord record;
  std::vector<PromptSection> sections;  // byte ranges in the user message
  Observation observation;
  std::vector<HistoryEntry> history;
};

std::vector<GeneratedRequest> generate_trace(const GenOptions& opt);

// The apps the generator knows (21).
std::vector<std::string> generator_apps();

}  // namespace tandem::agent
