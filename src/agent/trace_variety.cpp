#include "agent/trace_variety.h"

#include <algorithm>
#include <cstdio>

#include "agent/app_map.h"
#include "agent/reference_agent.h"

namespace tandem::agent {

void TraceVariety::add(const std::vector<TraceRecord>& trace) {
  for (const TraceRecord& r : trace) {
    ++records;
    needs_image += r.needs_image;
    if (!r.expected_action) continue;
    ++with_action;
    const std::string kind = (*r.expected_action).value("action", "");
    ++kinds[kind];
    const auto& msgs = r.body["messages"];
    const auto p = read_prompt(msgs.back()["content"].get<std::string>());
    if (!p) continue;
    std::string screen;
    for (const Control& c : p->controls) screen += control_line(c) + "\n";
    screens.insert(screen);
    const AppMap* app = find_app_by_name(p->app);
    Task task;
    if (!app || !parse_task(*app, p->task, task)) continue;
    tasks.insert(app->name + ": " + p->task);
    if (!task.target.empty()) targets.insert(app->name + ": " + task.target);
    if ((kind == "tap" || kind == "long_press") && !task.target.empty()) {
      const int64_t index = (*r.expected_action).value("index", int64_t{-1});
      for (const Control& c : p->controls)
        if (c.index == index && c.cls == "LinearLayout" && c.text.substr(0, c.text.find(" | ")) == task.target) {
          target_indices[app->name + ": " + p->task].insert(index);
          ++target_taps[app->name + ": " + p->task];
        }
    }
  }
}

size_t TraceVariety::tasks_with_moving_target() const {
  return static_cast<size_t>(std::count_if(target_indices.begin(), target_indices.end(),
                                           [](const auto& kv) { return kv.second.size() >= 2; }));
}

size_t TraceVariety::tasks_with_repeated_target() const {
  return static_cast<size_t>(
      std::count_if(target_taps.begin(), target_taps.end(), [](const auto& kv) { return kv.second >= 2; }));
}

std::string TraceVariety::mix() const {
  std::vector<std::pair<size_t, std::string>> v;
  for (const auto& [k, n] : kinds) v.push_back({n, k});
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::string s;
  for (const auto& [n, k] : v) {
    char b[64];
    std::snprintf(b, sizeof b, "%s%s %.1f%%", s.empty() ? "" : ", ", k.c_str(), 100.0 * static_cast<double>(n) / static_cast<double>(with_action));
    s += b;
  }
  return s;
}

}  // namespace tandem::agent
