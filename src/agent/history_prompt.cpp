#include "agent/history_prompt.h"

namespace tandem::agent {

namespace {

// Shared by both kinds of request: the model's persona and the action formats.
const std::string& agent_prefix() {
  static const std::string s =
      "You are an agent who can operate an Android phone on behalf of a user. Based on the user's goal, you may\n"
      "- answer back if the request is a question, by the answer action;\n"
      "- complete some tasks described in the request by performing actions on the phone, step by step.\n"
      "\n"
      "At each step you are given the goal, a history of what you have done so far and a list of the UI\n"
      "elements on the current screen. Pick ONE action from the list below and answer in the JSON format:\n"
      "- Finish the task when it is done or impossible: {\"action\":\"finish\",\"status\":\"success|failure|infeasible\",\"message\":\"...\"}\n"
      "- Answer the user's question: {\"action\":\"finish\",\"status\":\"success\",\"message\":\"<answer>\"}\n"
      "- Tap an element: {\"action\":\"tap\",\"index\":<element index>}\n"
      "- Long press an element: {\"action\":\"long_press\",\"index\":<element index>}\n"
      "- Type text into a text field (it is focused first): {\"action\":\"input\",\"index\":<element index>,\"text\":\"...\"}\n"
      "- Scroll the screen or a scrollable element: {\"action\":\"scroll\",\"direction\":\"up|down|left|right\",\"index\":<optional>}\n"
      "- Swipe across the screen: {\"action\":\"swipe\",\"direction\":\"up|down|left|right\"}\n"
      "- Go back, or to the home screen: {\"action\":\"back\"}, {\"action\":\"home\"}\n"
      "- Open an app: {\"action\":\"open_app\",\"app\":\"<name>\"}\n"
      "- Wait for the screen to update: {\"action\":\"wait\",\"seconds\":<S>}\n";
  return s;
}

const std::string& action_guidance() {
  static const std::string s =
      "\nHere are some useful guidelines you need to follow:\n"
      "General:\n"
      "- Usually there are multiple ways to complete a task; pick the easiest one. If an action does not\n"
      "  change the screen, do not repeat it: try another way.\n"
      "- If the goal is a question, answer it with the finish action's message before finishing.\n"
      "Action related:\n"
      "- Use open_app to start an app rather than looking for its icon.\n"
      "- Use input to type; it focuses the field for you. Clear a field's old text first when needed.\n"
      "- To find an element that is not listed, scroll down the list that should contain it; it is missing\n"
      "  once the list shows \"End of list\". While a screen says it is loading, wait.\n"
      "- Element indices change with every screen: only use indices from the list above.\n"
      "Text related:\n"
      "- For a search, type the query and confirm it with the keyboard's search key or the search button.\n"
      "\nNow output an action from the above list in the correct JSON format, following the reason why you do\n"
      "that. Your answer should look like:\n"
      "Reason: ...\n"
      "Action: {\"action\": ...}\n"
      "\nYour Answer:\n";
  return s;
}

const std::string& summary_guidance() {
  static const std::string s =
      "\nBy comparing the two screens and the action, write a one-sentence summary of this step. It\n"
      "will be added to the history of the next action prompt, so say what the action did, whether it\n"
      "had the expected effect, and, if it did not, what to try instead. Mention important values shown\n"
      "on the screen (a price, a time, a setting) that later steps will need.\n"
      "Summary of this step: ";
  return s;
}

const char* flag(bool b) { return b ? "true" : "false"; }

std::string quoted_or_null(const std::string& s) {
  if (s.empty()) return "null";
  return nlohmann::json(s).dump();
}

void element_list(std::string& t, const std::vector<Control>& controls, const std::string& package) {
  if (controls.empty()) t += "(no elements)\n";
  for (const Control& c : controls) t += element_line(c, package) + "\n";
}

}  // namespace

std::string element_line(const Control& c, const std::string& package) {
  // Rows of a phone screen: bounds follow the index (the serving core only sees their tokens).
  const int64_t top = 96 + (c.index * 137) % 2200;
  std::string s = "UI element " + std::to_string(c.index) + ": {\"class\": \"" + c.cls + "\", \"text\": " +
                  quoted_or_null(c.editable ? std::string() : c.text) +
                  ", \"hint\": " + quoted_or_null(c.editable ? c.text : std::string()) +
                  ", \"resource\": " + quoted_or_null(c.id.empty() ? std::string() : package + ":id/" + c.id) +
                  ", \"bounds\": [" + std::to_string(24 + (c.index % 3) * 8) + ", " + std::to_string(top) + ", " +
                  std::to_string(1056 - (c.index % 5) * 40) + ", " + std::to_string(top + 88 + (c.index % 4) * 12) + "]";
  s += ", \"clickable\": " + std::string(flag(c.clickable)) + ", \"editable\": " + flag(c.editable) +
       ", \"scrollable\": " + flag(c.scrollable) + ", \"checked\": " + flag(c.checked) +
       ", \"package\": \"" + package + "\"}";
  return s;
}

std::string history_line(size_t step, const StepMemory& m) {
  return "Step " + std::to_string(step) + "- Action selected: " + describe(m.action, m.label) + ". Reason: " + m.reason +
         " Summary: " + m.summary + "\n";
}

BuiltPrompt build_history_action_prompt(const Observation& obs, const std::string& package,
                                        const std::vector<StepMemory>& steps) {
  BuiltPrompt p;
  p.controls = flatten_controls(obs.tree);
  std::string& t = p.text;
  p.section("prefix", [&] { t += agent_prefix(); });
  p.section("task_history", [&] {
    t += "\nThe current user goal/request is: " + obs.task + "\n\nHere is a history of what you have done so far:\n";
    if (steps.empty()) t += "You just started, no action has been performed yet.\n";
    for (size_t i = 0; i < steps.size(); ++i) t += history_line(i + 1, steps[i]);
  });
  p.section("controls", [&] {
    t += "\nHere is a list of descriptions for some UI elements on the current screen:\n";
    element_list(t, p.controls, package);
  });
  p.section("guidelines", [&] { t += action_guidance(); });
  return p;
}

BuiltPrompt build_summary_prompt(const Observation& before, const Observation& after, const std::string& package,
                                 const StepMemory& step) {
  BuiltPrompt p;
  std::string& t = p.text;
  p.section("prefix", [&] { t += agent_prefix(); });
  p.section("task_history", [&] {
    t += "\nThe (overall) user goal/request is: " + before.task +
         "\nNow I want you to summarize the latest step, based on the action you picked, its reason and the "
         "descriptions of the screens before and after the action.\n";
  });
  p.section("controls", [&] {
    t += "Here is the description of the before screen:\n";
    element_list(t, flatten_controls(before.tree), package);
    t += "Here is the description of the after screen:\n";
    p.controls = flatten_controls(after.tree);
    element_list(t, p.controls, package);
  });
  p.section("guidelines", [&] {
    t += "This is the action you picked: " + to_text(step.action) + "\nBased on the reason: " + step.reason + "\n";
    t += summary_guidance();
  });
  return p;
}

}  // namespace tandem::agent
