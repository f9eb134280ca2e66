// Prompts of an agent that keeps its whole episode in the prompt and asks the model twice per
// step (issue 30). The model is the common open-source Android text agent (AndroidWorld's T3A):
// a shared instruction prefix, then
//
//   action prompt:   goal, "history of what you have done so far" (one line per earlier step,
//                    appended and never dropped: "Step k- Action selected: ... Summary: ..."),
//                    the screen's element list (one verbose line per element), closing
//                    instructions; answered with "Reason: ... Action: {...}".
//   summary prompt:  goal, the element lists of the screen before and after the action, the
//                    action and its reason; the answer becomes the next history line.
//
// The wording and the element format are this project's own (not T3A's text); what matters to
// serving is the structure: request k of the action kind diverges from request k-1 where history
// line k-1 begins, request k+1 after that line ends, and the two kinds share only the prefix.
#pragma once

#include <string>
#include <vector>

#include "agent/action.h"
#include "agent/prompt_builder.h"

namespace tandem::agent {

// One executed step as the agent remembers it.
struct StepMemory {
  Action action;
  std::string label;    // the control it touched, if any
  std::string reason;   // the "Reason:" of the action prompt's answer
  std::string summary;  // the summary prompt's answer
};

// "UI element 3: {"class": "TextView", "text": "...", ..., "package": "..."}": the node's fields
// and flags spelled out, as an agent dumping the accessibility node does (~80-110 tokens each).
std::string element_line(const Control& c, const std::string& package);

// "Step 3- Action selected: tap [4] "Search". Reason: .... Summary: ...\n"
std::string history_line(size_t step, const StepMemory& m);

// Sections: "prefix", "task_history", "controls", "guidelines".
BuiltPrompt build_history_action_prompt(const Observation& obs, const std::string& package,
                                        const std::vector<StepMemory>& steps);
// Sections: "prefix", "task_history", "controls" (both screens), "guidelines".
BuiltPrompt build_summary_prompt(const Observation& before, const Observation& after, const std::string& package,
                                 const StepMemory& step);

}  // namespace tandem::agent
