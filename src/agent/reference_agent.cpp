#include "agent/reference_agent.h"

#include <sstream>

#include "agent/app_map.h"

namespace tandem::agent {

namespace {

using json = nlohmann::json;

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// "[3] EditText "Search" clickable editable focused" (control_line's format).
std::optional<Control> read_control_line(const std::string& line) {
  const size_t close = line.find("] ");
  if (line.empty() || line[0] != '[' || close == std::string::npos) return std::nullopt;
  Control c;
  c.index = std::stoll(line.substr(1, close - 1));
  std::string rest = line.substr(close + 2);
  const size_t sp = rest.find(' ');
  c.cls = rest.substr(0, sp);
  rest = sp == std::string::npos ? "" : rest.substr(sp + 1);
  if (!rest.empty() && rest[0] == '"') {
    // Flags never hold a quote: the text runs to the last one.
    const size_t last = rest.rfind('"');
    c.text = rest.substr(1, last - 1);
    rest = rest.substr(last + 1);
  }
  std::istringstream flags(rest);
  for (std::string f; flags >> f;) {
    if (f == "clickable") c.clickable = true;
    else if (f == "long-clickable") c.long_clickable = true;
    else if (f == "editable") c.editable = true;
    else if (f == "scrollable") c.scrollable = true;
    else if (f == "checked") c.checkable = c.checked = true;
    else if (f == "unchecked") c.checkable = true;
    else if (f == "selected") c.selected = true;
    else if (f == "focused") c.focused = true;
    else if (starts_with(f, "id=")) c.id = f.substr(3);
  }
  return c;
}

// "UI element 3: {"class": "EditText", "text": null, "hint": "Search", ...}" (element_line's format).
std::optional<Control> read_element_line(const std::string& line, std::string& package) {
  const size_t colon = line.find(": {");
  if (!starts_with(line, "UI element ") || colon == std::string::npos) return std::nullopt;
  Control c;
  c.index = std::stoll(line.substr(11, colon - 11));
  const json e = json::parse(line.substr(colon + 2));
  c.cls = e.value("class", "");
  c.clickable = e.value("clickable", false);
  c.editable = e.value("editable", false);
  c.scrollable = e.value("scrollable", false);
  c.checked = e.value("checked", false);
  c.checkable = c.cls == "Switch";
  const json& text = e[c.editable ? "hint" : "text"];
  if (text.is_string()) c.text = text.get<std::string>();
  package = e.value("package", "");
  return c;
}

std::string line_after(const std::string& text, std::string_view key) {
  const size_t p = text.find(key);
  if (p == std::string::npos) return {};
  const size_t b = p + key.size();
  return text.substr(b, text.find('\n', b) - b);
}

std::string row_name(const Control& c) { return c.text.substr(0, c.text.find(" | ")); }

}  // namespace

std::optional<ReadPrompt> read_prompt(const std::string& text, std::string* why) {
  ReadPrompt p;
  std::istringstream lines(text);
  std::string line;
  if (text.find("\nScreen controls:\n") != std::string::npos) {
    p.paper = true;
    p.task = line_after(text, "\nTask: ");
    p.app = line_after(text, "\nApp: ");
    bool in_controls = false;
    while (std::getline(lines, line)) {
      if (line == "Screen controls:") {
        in_controls = true;
        continue;
      }
      if (!in_controls) continue;
      const auto c = read_control_line(line);
      if (!c) break;
      p.controls.push_back(*c);
    }
  } else if (text.find("\nThe current user goal/request is: ") != std::string::npos) {
    p.paper = false;
    p.task = line_after(text, "\nThe current user goal/request is: ");
    std::string package;
    while (std::getline(lines, line))
      if (const auto c = read_element_line(line, package)) p.controls.push_back(*c);
    if (const AppMap* a = find_app_by_package(package)) p.app = a->name;
  } else {
    if (why) *why = "not an action prompt of the paper's or the growing-history layout";
    return std::nullopt;
  }
  return p;
}

std::optional<Action> reference_decide(const ReadPrompt& prompt, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<Action> {
    if (why) *why = w;
    return std::nullopt;
  };
  const AppMap* app = find_app_by_name(prompt.app);
  if (!app) return fail("app \"" + prompt.app + "\" is not in the map");
  Task task;
  if (!parse_task(*app, prompt.task, task)) return fail("task \"" + prompt.task + "\" matches no template of " + app->name);
  const std::vector<Control>& cs = prompt.controls;
  auto find = [&](auto pred) -> const Control* {
    for (const Control& c : cs)
      if (pred(c)) return &c;
    return nullptr;
  };
  auto shows = [&](std::string_view t) { return find([&](const Control& c) { return c.text == t; }) != nullptr; };
  Action a;
  auto act = [&](ActionKind k, const Control* c) -> std::optional<Action> {
    if (!c) return fail("the screen has no control the rule needs");
    a.kind = k;
    a.index = c->index;
    return a;
  };
  auto finish = [&](FinishStatus s) {
    a.kind = ActionKind::Finish;
    a.status = s;
    a.text = std::string(s == FinishStatus::Success ? kFinishSuccess : kFinishInfeasible);
    return a;
  };
  // The screen's title: the top bar's text, the first passive text.
  const Control* title_c = find([](const Control& c) { return c.cls == "TextView" && !c.clickable; });
  const std::string title = title_c ? title_c->text : "";

  // Before any stage: loading, the goal shown, a page off the route.
  if (shows(kLoadingText)) {
    a.kind = ActionKind::Wait;
    a.seconds = kWaitSeconds;
    return a;
  }
  const TaskTemplate& t = *task.tmpl;
  // The goal: the task's done text on screen; a task without one ends on the target's own page (a
  // switch's task ends on its state, below).
  const bool toggle = t.route.back().op == StageOp::Toggle;
  if (!t.done.empty() ? shows(t.done) : !toggle && title == task.target) return finish(FinishStatus::Success);
  const Stage* stage = nullptr;
  for (const Stage& s : t.route)
    if (!stage && task.screen_of(s) == title) stage = &s;
  if (!stage) {
    a.kind = ActionKind::Back;
    return a;
  }
  const Control* field = find([](const Control& c) { return c.editable; });
  const std::string label = task.label_of(*stage);
  switch (stage->op) {
    case StageOp::Tap:
      return act(ActionKind::Tap, find([&](const Control& c) { return c.clickable && !c.editable && c.text == label; }));
    case StageOp::Search:
    case StageOp::Compose: {
      if (!field) return fail("no text field on \"" + title + "\"");
      const std::string typed = task.typed_at(*stage);
      if (field->text == typed)
        return act(ActionKind::Tap, find([&](const Control& c) { return c.clickable && !c.editable && c.text == stage->send; }));
      if (prompt.paper && !field->focused) return act(ActionKind::Tap, field);
      a.text = typed;
      return act(ActionKind::Input, field);
    }
    case StageOp::Find:
    case StageOp::LongPress: {
      const Control* row = find([&](const Control& c) { return c.clickable && c.cls == "LinearLayout" && row_name(c) == label; });
      if (row) return act(stage->op == StageOp::LongPress ? ActionKind::LongPress : ActionKind::Tap, row);
      if (shows(kEndOfList)) return finish(FinishStatus::Infeasible);
      a.direction = Direction::Down;
      return act(ActionKind::Scroll, find([](const Control& c) { return c.scrollable && c.cls == "RecyclerView"; }));
    }
    case StageOp::Toggle: {
      const Control* sw = find([&](const Control& c) { return c.checkable && c.text == label; });
      if (!sw) return fail("no switch \"" + label + "\"");
      if (sw->checked == task.on) return finish(FinishStatus::Success);
      return act(ActionKind::Tap, sw);
    }
  }
  return fail("unknown stage");
}

std::optional<Action> reference_action(const nlohmann::ordered_json& body, std::string* why) {
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    if (why) *why = "no messages";
    return std::nullopt;
  }
  const auto& msg = body["messages"].back();
  if (!msg.contains("content") || !msg["content"].is_string()) {
    if (why) *why = "the last message's content is not text";
    return std::nullopt;
  }
  const auto p = read_prompt(msg["content"].get<std::string>(), why);
  if (!p) return std::nullopt;
  return reference_decide(*p, why);
}

}  // namespace tandem::agent
