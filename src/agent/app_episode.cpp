#include "agent/app_episode.h"
#include "agent/random_draw.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tandem::agent {

namespace {

// Settings' home list: every section, the ones settings live in among them.
const std::vector<std::string>& settings_sections() {
  static const std::vector<std::string> s = {"Network & internet", "Connected devices", "Display", "Sound & vibration",
                                             "Notifications", "Battery", "Apps", "Storage", "Privacy", "Location",
                                             "Accessibility", "System"};
  return s;
}
// Pages an app may open on that lead nowhere near a task (Settings: the sections not on the way).
const std::vector<std::string>& unrelated_pages() {
  static const std::vector<std::string> p = {"Account", "Notifications", "Help & feedback", "Order history", "Wallet",
                                             "Privacy settings", "About"};
  return p;
}

std::string fmt(const char* f, int a, int b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// What a row shows after its name, in the app's look.
std::vector<std::string> row_details(const AppMap& app, Rng& rng) {
  static const std::vector<std::string> messages = {"See you at 7", "OK, sent", "[Photo]", "Thanks!", "Meeting moved to 3 pm",
                                                    "[Voice message]", "Where are you?", "Sounds good"};
  static const std::vector<std::string> artists = {"Jay Chou", "G.E.M.", "Eason Chan", "Faye Wong", "Mayday", "Pu Shu", "JJ Lin"};
  const std::string& n = app.name;
  auto price = [&] { return fmt("¥%d.%02d", uniform(rng, 5, 399), uniform(rng, 0, 99)); };
  if (n == "Taobao" || n == "JD" || n == "Meituan") return {price(), fmt("%d sold", uniform(rng, 10, 9000))};
  if (n == "WeChat") return {pick(rng, messages), fmt("%02d:%02d", uniform(rng, 7, 22), uniform(rng, 0, 59))};
  if (n == "Alipay") return {fmt("Last paid ¥%d.%02d", uniform(rng, 5, 500), uniform(rng, 0, 99))};
  if (n == "Amap" || n == "DiDi") return {fmt("%d.%d km", uniform(rng, 0, 30), uniform(rng, 0, 9))};
  if (n == "Douyin" || n == "Bilibili")
    return {fmt("%d.%dK views", uniform(rng, 1, 999), uniform(rng, 0, 9)), fmt("%d:%02d", uniform(rng, 0, 20), uniform(rng, 0, 59))};
  if (n == "NetEase Music" || n == "QQ Music") return {pick(rng, artists), fmt("%d:%02d", uniform(rng, 2, 5), uniform(rng, 0, 59))};
  if (n == "Dianping" || n == "Ctrip") return {price(), fmt("%d.%d rating", uniform(rng, 3, 4), uniform(rng, 0, 9))};
  if (n == "12306") return {fmt("%02d:%02d", uniform(rng, 6, 20), uniform(rng, 0, 11) * 5), fmt("%d seats left", uniform(rng, 0, 99))};
  if (n == "Clock") return {uniform(rng, 0, 1) ? "Weekdays" : "Once"};
  if (n == "Calendar") return {fmt("%02d:00 - %02d:30", uniform(rng, 8, 17), uniform(rng, 9, 19))};
  if (n == "Settings") return {};
  return {fmt("%d likes", uniform(rng, 1, 5000))};
}

// `n` distinct row names besides `exclude`: the pool first, then variants of it.
std::vector<std::string> other_names(const AppMap& app, const std::vector<Target>& pool, const std::string& exclude,
                                     size_t n, Rng& rng) {
  static const std::vector<std::string> suffixes = {"Pro", "Plus", "Mini", "Lite", "II", "Max", "Classic", "Deluxe"};
  std::vector<std::string> names;
  for (const Target& t : pool)
    if (t.name != exclude) names.push_back(t.name);
  std::shuffle(names.begin(), names.end(), rng);
  std::vector<std::string> out;
  for (size_t i = 0; out.size() < n && i < 400; ++i) {
    std::string cand;
    if (i < names.size()) cand = names[i];
    else if (app.name == "Clock") cand = fmt("%02d:%02d", uniform(rng, 5, 23), uniform(rng, 0, 11) * 5);
    else cand = pick(rng, pool).name + " " + pick(rng, suffixes);
    if (cand != exclude && std::find(out.begin(), out.end(), cand) == out.end()) out.push_back(cand);
  }
  return out;
}

std::vector<ListRow> rows_of(const AppMap& app, const std::vector<std::string>& names, Rng& rng) {
  std::vector<ListRow> rows;
  for (const std::string& n : names) rows.push_back({n, row_details(app, rng)});
  return rows;
}

bool is_popup(const std::vector<Stage>& route, int j) {
  // A menu or dialog: it follows a long press, or a tap on such a menu. It shows at once.
  if (j <= 0) return false;
  if (route[static_cast<size_t>(j - 1)].op == StageOp::LongPress) return true;
  return route[static_cast<size_t>(j - 1)].op == StageOp::Tap && is_popup(route, j - 1);
}

// Which route stages may show "Loading…" first: screens reached by navigating (not the search
// page, which opens at once, not a popup).
bool loads(const std::vector<Stage>& route, int j) {
  return j > 0 && route[static_cast<size_t>(j)].screen != kSearchTitle && !is_popup(route, j);
}

// The stage whose screen shows a task's done text: a task that ends in a popup opened by a long
// press reports on the list it was opened from (the row gone); one that ends in a form opened from
// the home screen reports on the home screen (the new row first); -1: the screen the last action
// was on.
int done_stage(const Task& t) {
  const auto& r = t.tmpl->route;
  for (size_t j = 0; j < r.size(); ++j)
    if (r[j].op == StageOp::LongPress && is_popup(r, static_cast<int>(r.size()) - 1)) return static_cast<int>(j);
  if (r.size() >= 2 && r.front().screen == "{app}" && r.back().op == StageOp::Compose && r.back().screen != "{target}")
    return 0;
  return -1;
}

int last_find(const std::vector<Stage>& route) {
  int j = -1;
  for (size_t i = 0; i < route.size(); ++i)
    if (route[i].op == StageOp::Find || route[i].op == StageOp::LongPress) j = static_cast<int>(i);
  return j;
}

}  // namespace

AppEpisode::AppEpisode(Task task, EpisodePlan plan, bool tap_first, Rng& rng)
    : task_(std::move(task)), plan_(std::move(plan)), tap_first_(tap_first), rng_(rng) {
  const size_t n = task_.tmpl->route.size();
  plan_.scrolls.resize(n, 0);
  plan_.loading.resize(n, 0);
  plan_.page.resize(n, 7);
  built_.resize(n);
  has_built_.assign(n, false);
  if (!plan_.detour.empty()) {
    cur_ = AppScreen{};
    cur_.title = plan_.detour;
    cur_.tabs = task_.app->tabs;
    cur_.info = {"Nothing new here", fmt("Last updated %d days ago", uniform(rng_, 2, 30))};
    cur_.has_list = true;
    cur_.page = static_cast<size_t>(plan_.page[0]);
    cur_.rows = rows_of(*task_.app, other_names(*task_.app, targets_of(*task_.app, *task_.tmpl), task_.target,
                                                cur_.page, rng_), rng_);
    at_ = -1;
  } else {
    enter(0);
  }
}

int AppEpisode::stage_index(const std::string& title) const {
  const auto& r = task_.tmpl->route;
  for (size_t i = 0; i < r.size(); ++i)
    if (task_.screen_of(r[i]) == title) return static_cast<int>(i);
  return -1;
}

AppScreen AppEpisode::build(int j) {
  const AppMap& app = *task_.app;
  const auto& route = task_.tmpl->route;
  const Stage& st = route[static_cast<size_t>(j)];
  const std::vector<Target>& pool = targets_of(app, *task_.tmpl);
  AppScreen s;
  s.title = task_.screen_of(st);
  s.page = static_cast<size_t>(std::max(1, plan_.page[static_cast<size_t>(j)]));
  // The tab bar stays at the bottom of every page but a popup.
  if (!is_popup(route, j)) s.tabs = app.tabs;
  const bool find = st.op == StageOp::Find || st.op == StageOp::LongPress;
  // The list a Find stage searches: the row it names (unless the task is infeasible here) on the
  // page the plan says, among other rows.
  auto find_list = [&](const std::vector<std::string>& fixed_rows) {
    const std::string name = task_.label_of(st);
    const int k = plan_.scrolls[static_cast<size_t>(j)];
    const bool missing = plan_.infeasible && j == last_find(route);
    const size_t p = s.page;
    std::vector<std::string> names;
    if (!fixed_rows.empty()) {
      for (const std::string& r : fixed_rows)
        if (r != name) names.push_back(r);
      std::shuffle(names.begin(), names.end(), rng_);
    }
    if (missing) {
      // The end shows after k scrolls, not before.
      const size_t n = static_cast<size_t>(uniform(rng_, static_cast<int>(k * p) + 1, static_cast<int>((k + 1) * p)));
      if (fixed_rows.empty()) names = other_names(app, pool, name, n, rng_);
      names.resize(std::min(n, names.size()));
    } else {
      const size_t pos = std::min(static_cast<size_t>(uniform(rng_, static_cast<int>(k * p), static_cast<int>(k * p + p - 1))),
                                  fixed_rows.empty() ? SIZE_MAX : names.size());
      const size_t n = pos + 1 + static_cast<size_t>(uniform(rng_, 0, static_cast<int>(p)));
      if (fixed_rows.empty()) names = other_names(app, pool, name, n - 1, rng_);
      names.insert(names.begin() + static_cast<std::ptrdiff_t>(std::min(pos, names.size())), name);
    }
    s.has_list = true;
    s.long_press_rows = st.op == StageOp::LongPress;
    if (app.name == "Settings") {
      for (const std::string& n : names) s.rows.push_back({n, {}});
    } else {
      s.rows = rows_of(app, names, rng_);
    }
  };
  if (s.title == app.name) {
    s.home = true;
    s.tabs = app.tabs;
    if (app.search) {
      s.has_field = true;
      s.field_label = st.op == StageOp::Search ? task_.label_of(st) : "Search";
      for (const std::string& c : other_names(app, pool, task_.target, static_cast<size_t>(uniform(rng_, 2, 4)), rng_))
        s.chips.push_back(c);
    }
    if (app.shortcuts.size() == 1) s.fab = app.shortcuts[0];
    else s.shortcuts = app.shortcuts;
    if (find) {
      find_list(app.name == "Settings" ? settings_sections() : std::vector<std::string>{});
    } else {
      // The app's feed: rows of its kind, the target not among them (the map says how to reach it).
      s.has_list = true;
      s.long_press_rows = app.name == "Clock" || app.name == "Calendar";
      s.rows = rows_of(app, other_names(app, pool, task_.target, s.page + static_cast<size_t>(uniform(rng_, 0, 4)), rng_), rng_);
    }
    return s;
  }
  if (s.title == kSearchTitle) {
    s.has_field = true;
    s.field_label = task_.label_of(st);
    s.focused = true;
    s.buttons = {st.send};
    // Recent searches, then what is trending (rows of the app's kind; the target not among them:
    // the task types it).
    const std::vector<std::string> names = other_names(app, pool, task_.target, static_cast<size_t>(uniform(rng_, 8, 11)), rng_);
    s.info = {"Recent searches"};
    for (size_t i = 0; i < names.size(); ++i) {
      if (i == 3) s.plain_rows.push_back({"Trending", {}});
      s.plain_rows.push_back({names[i], i < 3 ? std::vector<std::string>{} : row_details(app, rng_)});
    }
    return s;
  }
  if (s.title == kResultsTitle) {
    s.has_field = true;
    s.field_label = "Search";
    s.field_text = task_.target;
    s.chips = {"Sort", "Filter", "Nearby"};
    find_list({});
    return s;
  }
  if (find) {
    if (app.name == "Settings") {
      std::vector<std::string> rows;
      for (const Target& t : pool)
        if (t.group == s.title) rows.push_back(t.name);
      for (const char* extra : {"Preferences", "Advanced", "Help"}) rows.push_back(extra);
      find_list(rows);
    } else {
      find_list({});
    }
    return s;
  }
  if (st.screen == "{target}") {
    // The target's own page: what every task that acts on such a target can do there.
    s.info = {task_.target};
    for (const std::string& d : row_details(app, rng_)) s.info.push_back(d);
    for (const TaskTemplate& t : app.tasks) {
      bool in_pool = false;
      for (const Target& x : targets_of(app, t)) in_pool = in_pool || x.name == task_.target;
      if (!in_pool) continue;
      for (const Stage& o : t.route) {
        if (o.screen != "{target}") continue;
        if (o.op == StageOp::Tap && std::find(s.buttons.begin(), s.buttons.end(), o.label) == s.buttons.end())
          s.buttons.push_back(o.label);
        if (o.op == StageOp::Compose) {
          s.has_field = true;
          s.field_label = o.label;
          s.buttons.push_back(o.send);
        }
      }
    }
    if (st.op == StageOp::Toggle) {
      s.info = {fmt("%d apps use this setting", uniform(rng_, 1, 9))};
      s.switches.push_back({task_.label_of(st), task_.on == plan_.already});
      for (const char* r : {"Preferences", "Advanced", "Help", "About"}) s.plain_rows.push_back({r, {}});
    } else {
      s.buttons.push_back("Share");
      // Related rows under the page's own content.
      s.info.push_back("More like this");
      for (const std::string& n : other_names(app, pool, task_.target, static_cast<size_t>(uniform(rng_, 5, 7)), rng_))
        s.plain_rows.push_back({n, row_details(app, rng_)});
    }
    return s;
  }
  // A page the map names (a menu, a dialog, a form, a confirmation): every task's controls there.
  s.info = {task_.target.empty() ? task_.text : task_.target};
  for (const TaskTemplate& t : app.tasks)
    for (const Stage& o : t.route) {
      if (o.screen != st.screen) continue;
      if (o.op == StageOp::Tap && std::find(s.buttons.begin(), s.buttons.end(), o.label) == s.buttons.end())
        s.buttons.push_back(o.label);
      if (o.op == StageOp::Compose) {
        s.info.clear();
        s.has_field = true;
        s.field_label = o.label;
        s.buttons.push_back(o.send);
      }
    }
  if (s.title == "Chat options")
    for (const char* m : {"Mark as unread", "Mute"}) s.buttons.push_back(m);
  if (!is_popup(route, j)) {
    // A form or a confirmation page: what it is about, in the app's words.
    s.info.push_back(fmt("Updated %02d:%02d", uniform(rng_, 7, 22), uniform(rng_, 0, 59)));
    for (const std::string& d : row_details(app, rng_)) s.info.push_back(d);
    for (const std::string& n : other_names(app, pool, task_.target, static_cast<size_t>(uniform(rng_, 5, 7)), rng_))
      s.plain_rows.push_back({n, row_details(app, rng_)});
  }
  s.buttons.push_back("Cancel");
  return s;
}

void AppEpisode::enter(int j) {
  at_ = j;
  if (!has_built_[static_cast<size_t>(j)]) {
    built_[static_cast<size_t>(j)] = build(j);
    has_built_[static_cast<size_t>(j)] = true;
  }
  cur_ = built_[static_cast<size_t>(j)];
  pending_wait_ = plan_.loading[static_cast<size_t>(j)];
  cur_.loading = pending_wait_ > 0;
}

void AppEpisode::enter_goal() {
  goal_ = true;
  const TaskTemplate& t = *task_.tmpl;
  if (t.done.empty()) {
    // The goal is the target's page itself.
    AppScreen s;
    s.title = task_.target;
    s.info = {task_.target};
    for (const std::string& d : row_details(*task_.app, rng_)) s.info.push_back(d);
    s.buttons = {"Save", "Share"};
    cur_ = s;
    return;
  }
  const int at = done_stage(task_);
  if (at >= 0) {
    cur_ = built_[static_cast<size_t>(at)];
    cur_.first = 0;
    auto& rows = cur_.rows;
    if (t.route[static_cast<size_t>(at)].op == StageOp::LongPress) {
      rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const ListRow& r) { return r.name == task_.target; }), rows.end());
    } else {
      rows.insert(rows.begin(), ListRow{task_.text, {"Once"}});
    }
  } else {
    cur_.field_text.clear();
    cur_.focused = false;
  }
  cur_.toast = t.done;
}

HistoryEntry AppEpisode::expected(bool indexed) const {
  HistoryEntry h;
  Action& a = h.action;
  // Indices need the screen as the agent reads it; a path's length does not.
  std::vector<Control> controls;
  if (indexed) controls = flatten_controls(render(cur_));
  static const Control unindexed;
  auto index_of = [&](auto pred) -> const Control* {
    if (!indexed) return &unindexed;
    for (const Control& c : controls)
      if (pred(c)) return &c;
    throw std::logic_error("episode: no control for the expected action on \"" + cur_.title + "\"");
  };
  auto tap = [&](const Control* c, ActionKind k = ActionKind::Tap) {
    a.kind = k;
    a.index = c->index;
    h.label = c->text;
  };
  auto finish = [&](FinishStatus s) {
    a.kind = ActionKind::Finish;
    a.status = s;
    a.text = std::string(s == FinishStatus::Success ? kFinishSuccess : kFinishInfeasible);
  };
  if (cur_.loading) {
    a.kind = ActionKind::Wait;
    a.seconds = kWaitSeconds;
    return h;
  }
  if (goal_) {
    finish(FinishStatus::Success);
    return h;
  }
  if (at_ < 0) {
    a.kind = ActionKind::Back;
    return h;
  }
  const Stage& st = task_.tmpl->route[static_cast<size_t>(at_)];
  const Control* field = nullptr;
  if (cur_.has_field) field = index_of([](const Control& c) { return c.editable; });
  switch (st.op) {
    case StageOp::Tap: {
      const std::string label = task_.label_of(st);
      tap(index_of([&](const Control& c) { return c.clickable && !c.editable && c.text == label; }));
      break;
    }
    case StageOp::Search:
    case StageOp::Compose: {
      const std::string text = task_.typed_at(st);
      if (cur_.field_text == text) {
        tap(index_of([&](const Control& c) { return c.clickable && !c.editable && c.text == st.send; }));
      } else if (tap_first_ && !cur_.focused) {
        tap(field);
      } else {
        a.kind = ActionKind::Input;
        a.index = field->index;
        a.text = text;
        h.label = field->text;
      }
      break;
    }
    case StageOp::Find:
    case StageOp::LongPress: {
      const std::string name = task_.label_of(st);
      bool seen = false;
      for (const ListRow* r : cur_.visible()) seen = seen || r->name == name;
      if (seen) {
        tap(index_of([&](const Control& c) {
              return c.clickable && c.cls == "LinearLayout" && c.text.substr(0, c.text.find(" | ")) == name;
            }),
            st.op == StageOp::LongPress ? ActionKind::LongPress : ActionKind::Tap);
      } else if (cur_.end_visible()) {
        finish(FinishStatus::Infeasible);
      } else {
        a.kind = ActionKind::Scroll;
        a.direction = Direction::Down;
        a.index = index_of([](const Control& c) { return c.scrollable && c.cls == "RecyclerView"; })->index;
      }
      break;
    }
    case StageOp::Toggle: {
      const std::string label = task_.label_of(st);
      if (cur_.switches.at(0).on == task_.on) finish(FinishStatus::Success);
      else tap(index_of([&](const Control& c) { return c.checkable && c.text == label; }));
      break;
    }
  }
  return h;
}

bool AppEpisode::reads_rows() const {
  if (cur_.loading || goal_ || at_ < 0) return false;
  const StageOp op = task_.tmpl->route[static_cast<size_t>(at_)].op;
  return op == StageOp::Find || op == StageOp::LongPress;
}

void AppEpisode::apply(const HistoryEntry& step) {
  const Action& a = step.action;
  const auto& route = task_.tmpl->route;
  auto next_stage = [&](int from) {
    if (from + 1 < static_cast<int>(route.size())) enter(from + 1);
    else enter_goal();
  };
  switch (a.kind) {
    case ActionKind::Wait:
      if (--pending_wait_ <= 0) cur_.loading = false;
      return;
    case ActionKind::Finish:
      finished_ = true;
      return;
    case ActionKind::Back:
      enter(0);
      return;
    case ActionKind::Scroll:
      cur_.first += cur_.page;
      return;
    default:
      break;
  }
  const Stage& st = route[static_cast<size_t>(at_)];
  switch (st.op) {
    case StageOp::Search:
      if (st.screen != kSearchTitle) {
        // The home screen's field opens the search page: focused, holding what was typed.
        const std::string typed = a.kind == ActionKind::Input ? a.text : "";
        next_stage(at_);
        cur_.field_text = typed;
      } else if (a.kind == ActionKind::Input) {
        cur_.field_text = a.text;
      } else {
        next_stage(at_);  // the "Search" button: the results
      }
      return;
    case StageOp::Compose:
      if (a.kind == ActionKind::Input) cur_.field_text = a.text;
      else if (cur_.field_text == task_.typed_at(st)) next_stage(at_);
      else cur_.focused = true;
      // The page as it now is, for a later visit (there is none: paths only go forward).
      return;
    case StageOp::Toggle:
      cur_.switches.at(0).on = !cur_.switches.at(0).on;
      goal_ = true;
      return;
    default:
      next_stage(at_);
      return;
  }
}

std::string AppEpisode::reason(const HistoryEntry& h) const {
  const Action& a = h.action;
  switch (a.kind) {
    case ActionKind::Wait: return "the screen says it is still loading, so I wait for it.";
    case ActionKind::Back: return "this page cannot lead to the goal, so I go back.";
    case ActionKind::Scroll: return "\"" + task_.label_of(task_.tmpl->route[static_cast<size_t>(at_)]) +
                                    "\" is not in the list yet and the list goes on, so I scroll down.";
    case ActionKind::Input: return "I type \"" + a.text + "\" into the field \"" + h.label + "\".";
    case ActionKind::Tap: return "\"" + h.label + "\" is the control the task needs on this screen, so I tap it.";
    case ActionKind::LongPress: return "the options for \"" + h.label + "\" open with a long press.";
    case ActionKind::Finish:
      return a.status == FinishStatus::Success ? "the screen shows the task done."
                                               : "the list ended without the item, so the task cannot be done.";
    default: return "this is the next action the task needs.";
  }
}

int path_length(const Task& task, const EpisodePlan& plan, bool tap_first, Rng rng) {
  AppEpisode e(task, plan, tap_first, rng);
  int n = 0;
  while (!e.finished() && n < 64) {
    e.apply(e.expected(false));
    ++n;
  }
  if (!e.finished()) throw std::logic_error("episode: a path of " + task.str() + " does not finish");
  return n;
}

constexpr int kMaxPadding = 1;

DrawnEpisode draw_episode(const AppMap& app, int steps, bool tap_first, double controls_scale, double unchanged_rate, Rng& rng) {
  auto draw_task = [&] {
    int total = 0;
    for (const TaskTemplate& t : app.tasks) total += t.weight;
    int w = uniform(rng, 0, total - 1);
    const TaskTemplate* tmpl = &app.tasks.back();
    for (const TaskTemplate& t : app.tasks) {
      if (w < t.weight) {
        tmpl = &t;
        break;
      }
      w -= t.weight;
    }
    Task task;
    task.app = &app;
    task.tmpl = tmpl;
    if (tmpl->pattern.find("{target}") != std::string::npos) {
      const Target& x = pick(rng, targets_of(app, *tmpl));
      task.target = x.name;
      task.group = x.group;
    }
    if (tmpl->pattern.find("{text}") != std::string::npos) task.text = pick(rng, texts_of(app, *tmpl));
    task.on = chance(rng, 0.5);
    return task;
  };
  DrawnEpisode best;
  int best_len = 1 << 30;
  for (int attempt = 0; attempt < 64; ++attempt) {
    DrawnEpisode d;
    d.task = draw_task();
    const auto& route = d.task.tmpl->route;
    const size_t n = route.size();
    EpisodePlan& p = d.plan;
    p.scrolls.assign(n, 0);
    p.loading.assign(n, 0);
    p.page.assign(n, 0);
    for (int& pg : p.page) pg = std::max(2, static_cast<int>(uniform(rng, 7, 10) * controls_scale + 0.5));
    const int lf = last_find(route);
    p.infeasible = lf >= 0 && chance(rng, 0.1);
    p.already = route.back().op == StageOp::Toggle && chance(rng, 0.15);
    const int base = path_length(d.task, p, tap_first, rng);
    // Padding (a detour, scrolls, loads) fills what the task's own path leaves of the episode.
    // Episodes prefer tasks that leave at most kMaxPadding, so that most actions are the tasks' own
    // (taps and typing), as in an agent's real traces; single screens get up to one.
    int extra = steps > 0 ? steps - base : uniform(rng, 0, 1);
    if (steps > 0 && extra > (attempt < 16 ? kMaxPadding : kMaxPadding + 1) && attempt < 32) {
      if (best_len == 1 << 30) best = d;
      continue;
    }
    if (extra < 0) {
      if (base < best_len || best_len == 1 << 30) {
        best = d;
        best_len = base;
      }
      continue;
    }
    // Fill the path: a detour at the start, pages to scroll, screens that load.
    const int reach = p.infeasible ? lf : static_cast<int>(n) - 1;  // stages the path visits
    while (extra > 0) {
      std::vector<std::pair<double, int>> options;  // weight, what: -1 detour, 2j scroll j, 2j+1 load j
      if (p.detour.empty()) options.push_back({0.2, -1});
      for (int j = 0; j <= reach; ++j) {
        const StageOp op = route[static_cast<size_t>(j)].op;
        const bool is_find = op == StageOp::Find || op == StageOp::LongPress;
        int cap = 3;
        if (is_find && app.name == "Settings" && j == 0)
          cap = (static_cast<int>(settings_sections().size()) - 1) / p.page[static_cast<size_t>(j)];
        if (is_find && app.name == "Settings" && j == 1) cap = 0;  // a section lists a handful
        if (is_find && p.scrolls[static_cast<size_t>(j)] < cap) options.push_back({0.6, 2 * j});
        if (loads(route, j) && p.loading[static_cast<size_t>(j)] == 0) options.push_back({0.08, 2 * j + 1});
      }
      if (options.empty()) break;
      double total = 0;
      for (const auto& o : options) total += o.first;
      double r = std::uniform_real_distribution<double>(0, total)(rng);
      int what = options.back().second;
      for (const auto& o : options) {
        if (r < o.first) {
          what = o.second;
          break;
        }
        r -= o.first;
      }
      if (what == -1) {
        std::vector<std::string> pages = unrelated_pages();
        if (app.name == "Settings")
          for (const std::string& s : settings_sections())
            if (s != d.task.group) pages.push_back(s);
        p.detour = pick(rng, pages);
        --extra;
      } else if (what % 2 == 0) {
        ++p.scrolls[static_cast<size_t>(what / 2)];
        --extra;
      } else {
        // Now and then a screen still loads after the first wait.
        p.loading[static_cast<size_t>(what / 2)] = extra >= 2 && chance(rng, unchanged_rate) ? 2 : 1;
        extra -= p.loading[static_cast<size_t>(what / 2)];
      }
    }
    if (extra > 0 && steps > 0) {
      if (best_len == 1 << 30) best = d;  // nothing fits yet: keep one to fall back on
      continue;
    }
    if (steps > 0 && path_length(d.task, p, tap_first, rng) != steps)
      throw std::logic_error("episode: the plan of " + d.task.str() + " does not take " + std::to_string(steps) + " steps");
    return d;
  }
  return best;
}

}  // namespace tandem::agent
