#include "agent/prompt_builder.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::agent {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

std::string short_name(const std::string& s) {
  const size_t p = s.find_last_of("./");
  return p == std::string::npos ? s : s.substr(p + 1);
}

bool flag(const json& n, const char* key) {
  if (!n.contains(key)) return false;
  const json& v = n[key];
  if (!v.is_boolean()) throw std::invalid_argument(std::string("accessibility node: \"") + key + "\" must be a boolean");
  return v.get<bool>();
}

std::string str(const json& n, const char* key) {
  if (!n.contains(key) || n[key].is_null()) return {};
  if (!n[key].is_string()) throw std::invalid_argument(std::string("accessibility node: \"") + key + "\" must be a string");
  return n[key].get<std::string>();
}

void walk(const json& node, std::vector<Control>& out, int depth) {
  if (depth > 64) throw std::invalid_argument("accessibility tree deeper than 64 levels");
  if (node.is_array()) {
    for (const json& c : node) walk(c, out, depth + 1);
    return;
  }
  if (!node.is_object()) throw std::invalid_argument("accessibility tree: a node must be an object");
  Control c;
  c.cls = short_name(str(node, "class"));
  c.text = str(node, "text");
  if (c.text.empty()) c.text = str(node, "content_desc");
  c.id = short_name(str(node, "resource_id"));
  c.clickable = flag(node, "clickable");
  c.long_clickable = flag(node, "long_clickable");
  c.editable = flag(node, "editable");
  c.scrollable = flag(node, "scrollable");
  c.checkable = flag(node, "checkable");
  c.checked = flag(node, "checked");
  c.selected = flag(node, "selected");
  c.focused = flag(node, "focused");
  const bool actionable = c.clickable || c.long_clickable || c.editable || c.scrollable || c.checkable;
  const json* children = nullptr;
  if (node.contains("children")) {
    children = &node["children"];
    if (!children->is_array()) throw std::invalid_argument("accessibility node: \"children\" must be an array");
  }
  // A clickable container without text of its own (a list row) takes the texts of its passive
  // children, which are then not listed separately: one line per thing the agent can tap.
  bool absorbed = false;
  if (c.clickable && c.text.empty() && !c.scrollable && children && !children->empty()) {
    std::string joined;
    bool all_passive = true;
    for (const json& k : *children) {
      if (!k.is_object()) throw std::invalid_argument("accessibility tree: a node must be an object");
      for (const char* f : {"clickable", "long_clickable", "editable", "scrollable", "checkable"})
        all_passive = all_passive && !flag(k, f);
      all_passive = all_passive && !k.contains("children");
      std::string t = str(k, "text");
      if (t.empty()) t = str(k, "content_desc");
      if (!t.empty()) joined += (joined.empty() ? "" : " | ") + t;
    }
    if (all_passive && !joined.empty()) {
      c.text = std::move(joined);
      absorbed = true;
    }
  }
  if (actionable || !c.text.empty()) {
    c.index = static_cast<int64_t>(out.size());
    if (c.cls.empty()) c.cls = "View";
    out.push_back(std::move(c));
  }
  if (children && !absorbed)
    for (const json& k : *children) walk(k, out, depth + 1);
}

}  // namespace

std::vector<Control> flatten_controls(const json& tree) {
  std::vector<Control> out;
  if (tree.is_null()) return out;
  walk(tree, out, 0);
  return out;
}

std::string control_line(const Control& c) {
  std::string s = "[" + std::to_string(c.index) + "] " + c.cls;
  if (!c.text.empty()) s += " \"" + c.text + "\"";
  if (!c.id.empty() && c.text.empty()) s += " id=" + c.id;
  if (c.clickable) s += " clickable";
  if (c.long_clickable) s += " long-clickable";
  if (c.editable) s += " editable";
  if (c.scrollable) s += " scrollable";
  if (c.checkable) s += c.checked ? " checked" : " unchecked";
  if (c.selected) s += " selected";
  if (c.focused) s += " focused";
  return s;
}

const std::string& rules_text() {
  static const std::string s =
      "You operate an Android phone for the user. You see the task, the app, your recent actions and the "
      "numbered controls of the screen. Choose the next action.\n"
      "\n"
      "Actions (reply with exactly one JSON object on one line, nothing else):\n"
      "{\"action\":\"tap\",\"index\":N} tap control N\n"
      "{\"action\":\"long_press\",\"index\":N} press and hold control N\n"
      "{\"action\":\"input\",\"index\":N,\"text\":\"...\"} type text into field N\n"
      "{\"action\":\"scroll\",\"direction\":\"up|down|left|right\",\"index\":N} scroll list N "
      "(no index: the screen)\n"
      "{\"action\":\"swipe\",\"direction\":\"up|down|left|right\"} swipe across the screen\n"
      "{\"action\":\"back\"} press Back\n"
      "{\"action\":\"home\"} go to the home screen\n"
      "{\"action\":\"open_app\",\"app\":\"name\"} launch an app\n"
      "{\"action\":\"wait\",\"seconds\":S} wait for the screen to load\n"
      "{\"action\":\"finish\",\"status\":\"success|failure|infeasible\",\"message\":\"...\"} stop and "
      "report\n";
  return s;
}

const std::string& guidelines_text() {
  static const std::string s =
      "\n"
      "Guidelines:\n"
      "1. Use only indices of the current screen; they change on every screen.\n"
      "2. Prefer controls whose text matches the task.\n"
      "3. Tap a field before typing into it unless it is focused.\n"
      "4. If the item is not visible, scroll down; at \"End of list\" it is missing.\n"
      "5. Go back from a page that cannot lead to the task.\n"
      "6. Wait while the screen is loading.\n"
      "7. When the screen shows the task done or impossible, finish with that status.\n";
  return s;
}

BuiltPrompt build_prompt(const Observation& obs, const std::vector<HistoryEntry>& history, const PromptLayout& layout) {
  if (layout.history_window < 0) throw std::invalid_argument("history window must be >= 0");
  BuiltPrompt p;
  p.controls = flatten_controls(obs.tree);
  std::string& t = p.text;

  auto memory = [&] {
    t += layout.growing_memory ? "Memory (all actions so far):\n" : "Recent actions (oldest first):\n";
    const size_t n = history.size();
    const size_t first =
        layout.growing_memory ? 0 : n - std::min(n, static_cast<size_t>(layout.history_window));
    if (first == n) t += "(none)\n";
    for (size_t i = first; i < n; ++i)
      t += std::to_string(i + 1) + ". " + describe(history[i].action, history[i].label) + "\n";
  };

  if (layout.date_first && !obs.date.empty()) p.section("date", [&] { t += "Date: " + obs.date + "\n\n"; });
  p.section("rules", [&] {
    t += rules_text();
    if (!layout.guidelines_after_screen) t += guidelines_text();
  });
  if (layout.growing_memory && layout.memory_before_task) p.section("task_history", [&] {
    t += "\n";
    memory();
  });
  p.section("task_history", [&] {
    t += "\nTask: " + obs.task + "\nApp: " + obs.app + "\n";
    if (!(layout.growing_memory && layout.memory_before_task)) memory();
  });
  p.section("controls", [&] {
    t += "\nScreen controls:\n";
    if (p.controls.empty()) t += "(no controls)\n";
    for (const Control& c : p.controls) t += control_line(c) + "\n";
  });
  if (layout.guidelines_after_screen) p.section("guidelines", [&] { t += guidelines_text(); });
  return p;
}

ojson chat_request(const BuiltPrompt& p, const RequestOptions& opt) {
  ojson body;
  body["messages"] = ojson::array({ojson{{"role", "user"}, {"content", p.text}}});
  body["max_tokens"] = opt.max_tokens;
  body["temperature"] = opt.temperature;
  return body;
}

}  // namespace tandem::agent
