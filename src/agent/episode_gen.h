// Synthetic agent traces with the paper's structure (paper §3, serving spec §1): seeded, built with
// the prompt builder from the screens of simulated apps (app_episode.h), whose expected actions
// follow from the prompt (issue 49: a reference agent reading only the request reproduces them).
// Default: 21 single screens from 21 apps (each a step among the first four of its own task's
// path, with the actions that led there), then 5 episodes of 8 steps in 5 apps; 61 requests.
// tandem-gen-trace -m MODEL prints the token counts of the parts (docs/agent.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/history_prompt.h"
#include "agent/prompt_builder.h"
#include "agent/trace.h"

namespace tandem::agent {

struct GenOptions {
  uint64_t seed = 1;
  // Paper: the layout above (default). Growing (issue 30): episodes only, each step's action prompt
  // built by history_prompt.h — a history that grows by one line per step (~60-110 tokens: the
  // action, its reason and the step's summary) and the screen's verbose element list after it.
  // Alternating: the same, plus after every step but the last the summary prompt that wrote that
  // history line (the screens before and after the action), as the agent sends them: action,
  // summary, action, ... The `layout` and `single_screens` fields apply to Paper only.
  enum class Layout { Paper, Growing, Alternating };
  Layout trace_layout = Layout::Paper;
  int single_screens = 21;  // at most the number of built-in apps (21)
  int episodes = 5;
  int steps = 8;            // per episode; the last step finishes the task
  PromptLayout layout;
  RequestOptions request;
  double controls_scale = 1.0;  // scales the number of list items per screen
  std::string date = "2026-08-14 09:30";  // first date line (date_first layouts), advances per step
  // Screenshot steps (issue 26; off by default: the trace is then the text trace above).
  // Sparse: a share `sparse_rate` of screens draw their list on a canvas the accessibility tree
  // does not describe (the rows stay clickable, unlabelled), and a step attaches a screenshot when
  // its accessibility data is sparse (screen_is_sparse). All: every step attaches one. With
  // screenshots on, a sparse step's record says "needs_image" when its expected action reads the
  // list's rows, which only the picture shows.
  // `unchanged_rate`: the chance that a screen which loads is still loading after the first wait
  // (the second wait sees the same screen: the same screenshot, which the server's encoder cache
  // recognises).
  enum class Screenshots { Off, Sparse, All };
  Screenshots screenshots = Screenshots::Off;
  double sparse_rate = 0.25;
  double unchanged_rate = 0.15;
};

// The agent's rule for attaching a screenshot: at least 3 clickable nodes of the accessibility
// tree say nothing about themselves — no text and no description in their subtree (a switch or a
// text field does not count: its row or its hint says what it is).
bool screen_is_sparse(const nlohmann::json& tree);

struct GeneratedRequest {
  TraceRecord record;
  std::vector<PromptSection> sections;  // byte ranges in the user message
  Observation observation;
  std::vector<HistoryEntry> history;
  // With screenshots on: whether this step attaches one, the full screen it draws (a sparse
  // screen's tree lacks what the screenshot shows) and the status bar's clock.
  bool screenshot = false;
  nlohmann::json screen;
  std::string clock;
  bool summary = false;  // Alternating: the step's summary prompt
};

std::vector<GeneratedRequest> generate_trace(const GenOptions& opt);

// The apps the generator knows (21).
std::vector<std::string> generator_apps();

}  // namespace tandem::agent
