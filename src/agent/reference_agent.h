// A rule-based reference agent (issue 49): it reads a request's messages only — the prompt's
// task, app and screen controls, parsed back from the text — plus the apps' fixed navigation maps
// (app_map.h), and applies the map's rules. It never sees the generator's state, so when it
// reproduces every step's expected_action, each of those actions follows from the prompt: a
// policy reading the same prompt can learn it.
//
// It reads the paper's prompt (prompt_builder.h, every PromptLayout) and the growing-history
// agent's action prompt (history_prompt.h); a summary prompt asks for no action.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/action.h"
#include "agent/prompt_builder.h"

namespace tandem::agent {

// What the agent reads from a prompt.
struct ReadPrompt {
  bool paper = true;  // the paper's prompt (its guidelines: tap a field before typing unless focused)
  std::string task, app;
  std::vector<Control> controls;
};

// Reads a prompt's text; nullopt (and why) when it is not an action prompt of a known layout.
std::optional<ReadPrompt> read_prompt(const std::string& text, std::string* why = nullptr);

// The action the map's rules give for a read prompt; nullopt (and why) when the app or the task is
// not in the map, or the screen lacks what the rules look for.
std::optional<Action> reference_decide(const ReadPrompt& prompt, std::string* why = nullptr);

// Both, on a chat-completions request body (its last user message).
std::optional<Action> reference_action(const nlohmann::ordered_json& body, std::string* why = nullptr);

}  // namespace tandem::agent
