// The agent's prompt, rebuilt from scratch at every step the way the paper's app does
// (paper §2.1, serving spec §1): fixed rules (the action list, the JSON format, guidelines),
// the task and foreground app, the last few actions, then the indexed on-screen controls,
// all in one user message. The model answers with one JSON action (action.h).
//
// Default layout (PromptLayout{}):
//
//   <rules: intro, actions with their JSON format, guidelines>
//   Task: <task>
//   App: <app>
//   Recent actions:
//   1. tap [4] "Search"
//   ...                          (the last `history_window` actions; "(none)" at the first step)
//   Screen controls:
//   [0] ImageButton "Back" clickable
//   ...
//
// Other real layouts: a growing memory of every action instead of the window
// (`growing_memory`), the guidelines after the screen (`guidelines_after_screen`), a date line
// first (`date_first`). The serving core never depends on one of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/action.h"

namespace tandem::agent {

// One indexed control of the screen, flattened from the accessibility tree.
struct Control {
  int64_t index = 0;
  std::string cls;    // short class name: Button, EditText, TextView, ...
  std::string text;   // text, else content description
  std::string id;     // resource id (short form), may be empty
  bool clickable = false, long_clickable = false, editable = false, scrollable = false;
  bool checkable = false, checked = false, selected = false, focused = false;
};

// Accessibility tree JSON (what an Android agent reads): a node is
//   {"class": "android.widget.Button", "text": "...", "content_desc": "...", "resource_id": "...",
//    "clickable": true, "long_clickable": false, "editable": false, "scrollable": false,
//    "checkable": false, "checked": false, "selected": false, "focused": false,
//    "bounds": [l, t, r, b], "children": [...]}
// (every field optional), or an array of such nodes. flatten_controls() walks it depth first and
// indexes the nodes an agent can act on or read: clickable, long-clickable, editable, scrollable,
// checkable, or carrying text / a description. A clickable container with no text of its own whose
// children are all passive text (a list row) is one control with their texts joined by " | ".
// Throws std::invalid_argument for a malformed tree.
std::vector<Control> flatten_controls(const nlohmann::json& tree);

// "[3] Button "Search" clickable"
std::string control_line(const Control& c);

struct Observation {
  std::string app;
  std::string task;
  nlohmann::json tree = nlohmann::json::array();  // accessibility tree
  std::string date;   // for date_first layouts, e.g. "2026-08-14 Fri 09:41"
  std::string image;  // screenshot path (carried into the trace; not rendered as text)
};

// One executed action, as the history shows it.
struct HistoryEntry {
  Action action;
  std::string label;  // the text of the control it touched, if any
};

struct PromptLayout {
  int history_window = 3;             // last N actions
  bool growing_memory = false;        // every action of the episode, as a numbered memory
  bool memory_before_task = false;    // growing memory placed before the task (some agents do)
  bool guidelines_after_screen = false;
  bool date_first = false;
};

// Byte ranges of the parts of the built text, for token accounting.
struct PromptSection {
  std::string name;  // "rules", "task_history", "controls", "guidelines", "date"
  size_t begin = 0, end = 0;
};

struct BuiltPrompt {
  std::string text;                    // the user message
  std::vector<PromptSection> sections; // in text order, covering the text
  std::vector<Control> controls;

  // Runs `write`, which appends to text, and records what it appended as the section `name`
  // (nothing when it appended nothing).
  template <class Write>
  void section(const char* name, Write&& write) {
    const size_t begin = text.size();
    write();
    if (text.size() > begin) sections.push_back({name, begin, text.size()});
  }
};

// The fixed rules (intro + action list + JSON format) and the guidelines, as the builder emits them.
const std::string& rules_text();
const std::string& guidelines_text();

// history: the episode's actions so far, oldest first (the builder keeps the window itself).
BuiltPrompt build_prompt(const Observation& obs, const std::vector<HistoryEntry>& history,
                         const PromptLayout& layout = {});

struct RequestOptions {
  // An action is ~14 tokens (paper §3.1), but an input's text or a finish's message makes it longer:
  // 64 holds every answer the generator expects even counted in bytes (episode_gen.cpp checks it).
  int64_t max_tokens = 64;
  double temperature = 0;  // greedy, as the agent decodes
};

// An OpenAI chat-completions request body with the prompt as its one user message.
nlohmann::ordered_json chat_request(const BuiltPrompt& p, const RequestOptions& opt = {});

}  // namespace tandem::agent
