#include "agent/episode_gen.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>

#include "agent/app_episode.h"
#include "agent/app_map.h"
#include "agent/app_screen.h"
#include "agent/random_draw.h"

namespace tandem::agent {

using json = nlohmann::json;

namespace {


std::string date_at(const std::string& base, int64_t minutes) {
  int y = 2026, mo = 8, d = 14, hh = 9, mm = 30;
  if (std::sscanf(base.c_str(), "%d-%d-%d %d:%d", &y, &mo, &d, &hh, &mm) != 5)
    throw std::invalid_argument("date: expected \"YYYY-MM-DD HH:MM\", got \"" + base + "\"");
  int64_t total = hh * 60 + mm + minutes;
  d += static_cast<int>(total / (24 * 60));
  total %= 24 * 60;
  char b[40];
  std::snprintf(b, sizeof b, "%04d-%02d-%02d %02d:%02d", y, mo, d, static_cast<int>(total / 60), static_cast<int>(total % 60));
  return b;
}

// A screen whose list is drawn on a canvas: the rows stay clickable, without their content.

// The order in which episodes visit the apps (a shuffle of all).
std::vector<size_t> shuffled_apps(Rng& rng) {
  std::vector<size_t> order(app_maps().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// Issue 30's summary of a step (the growing layout's history line): what the action did, two or
// three texts the screen after it shows, and what comes next, which is what the agent then does.
std::string step_summary(const HistoryEntry& h, const std::vector<Control>& after, const std::optional<HistoryEntry>& next,
                         Rng& rng) {
  std::string s;
  switch (h.action.kind) {
    case ActionKind::Tap: s = "I tapped \"" + h.label + "\" and the screen changed"; break;
    case ActionKind::LongPress: s = "I long-pressed \"" + h.label + "\" and its options opened"; break;
    case ActionKind::Input: s = "I typed \"" + h.action.text + "\" into \"" + h.label + "\""; break;
    case ActionKind::Scroll: s = "I scrolled the list down and more items came into view"; break;
    case ActionKind::Back: s = "I went back"; break;
    case ActionKind::Wait: s = "I waited two seconds"; break;
    default: s = "The action was performed"; break;
  }
  std::vector<const Control*> texts;
  for (const Control& c : after)
    if (!c.text.empty() && !c.editable && c.text.size() > 3) texts.push_back(&c);
  if (!texts.empty()) {
    s += "; the screen shows ";
    const int n = std::min(static_cast<int>(texts.size()), uniform(rng, 2, 3));
    const size_t first = std::uniform_int_distribution<size_t>(0, texts.size() - 1)(rng);
    for (int k = 0; k < n; ++k) {
      if (k) s += k + 1 == n ? " and " : ", ";
      s += "\"" + texts[(first + static_cast<size_t>(k)) % texts.size()]->text + "\"";
    }
  }
  s += ". ";
  if (!next) return s + "The task is over.";
  const Action& a = next->action;
  switch (a.kind) {
    case ActionKind::Tap: return s + "Next I tap \"" + next->label + "\".";
    case ActionKind::LongPress: return s + "Next I long-press \"" + next->label + "\".";
    case ActionKind::Input: return s + "Next I type \"" + a.text + "\".";
    case ActionKind::Scroll: return s + "What I need is not in view yet, so next I scroll down.";
    case ActionKind::Wait: return s + "It is still loading, so next I wait.";
    case ActionKind::Back: return s + "This page does not lead to the goal, so next I go back.";
    case ActionKind::Finish:
      return s + (a.status == FinishStatus::Success ? "The task is done, so next I finish."
                                                    : "The list ended without it, so next I report the task infeasible.");
    default: return s;
  }
}

bool has_label(const json& n) {
  for (const char* k : {"text", "content_desc"})
    if (n.contains(k) && n[k].is_string() && !n[k].get_ref<const std::string&>().empty()) return true;
  if (n.contains("children") && n["children"].is_array())
    for (const json& c : n["children"])
      if (has_label(c)) return true;
  return false;
}
int unlabelled_clickables(const json& n) {
  if (n.is_array()) {
    int k = 0;
    for (const json& c : n) k += unlabelled_clickables(c);
    return k;
  }
  if (!n.is_object()) return 0;
  int k = n.value("clickable", false) && !n.value("checkable", false) && !n.value("editable", false) && !has_label(n);
  if (n.contains("children")) k += unlabelled_clickables(n["children"]);
  return k;
}

// Every expected answer must fit its request's max_tokens with the end-of-turn token: a token is at
// least one byte, so bytes + 1 bound the tokens whatever the tokenizer.
void check_answer_fits(const std::vector<GeneratedRequest>& out, int64_t max_tokens) {
  for (const GeneratedRequest& g : out) {
    if (!g.record.expected_action) continue;
    const std::string answer = g.record.expected_action->dump();
    if (static_cast<int64_t>(answer.size()) + 1 > max_tokens)
      throw std::invalid_argument("max tokens: " + std::to_string(max_tokens) + " cannot hold the expected answer " + answer +
                                  " (" + std::to_string(answer.size()) + " bytes + the end of turn; a token is at least a byte)");
  }
}

}  // namespace

bool screen_is_sparse(const json& tree) { return unlabelled_clickables(tree) >= 3; }

std::vector<std::string> generator_apps() {
  std::vector<std::string> out;
  for (const AppMap& a : app_maps()) out.push_back(a.name);
  return out;
}

namespace {

// Issue 30's layouts: episodes of a growing-history agent (history_prompt.h). Its prompt says
// input focuses a field, so it types without tapping first.
std::vector<GeneratedRequest> generate_history_trace(const GenOptions& opt) {
  Rng rng(opt.seed);
  std::vector<GeneratedRequest> out;
  const bool alternating = opt.trace_layout == GenOptions::Layout::Alternating;
  auto emit = [&](const BuiltPrompt& p, const Task& task, const std::string& episode, int64_t step,
                  const Observation& obs, const std::optional<Action>& expected, bool summary) {
    GeneratedRequest g;
    g.observation = obs;
    g.sections = p.sections;
    g.record.body = chat_request(p, opt.request);
    g.record.episode = episode;
    g.record.step = step;
    g.record.app = task.app->name;
    g.record.task = task.str();
    if (expected) g.record.expected_action = to_json(*expected);
    g.summary = summary;
    out.push_back(std::move(g));
  };
  const std::vector<size_t> order = shuffled_apps(rng);
  for (int e = 0; e < opt.episodes; ++e) {
    const AppMap& app = app_maps()[order[static_cast<size_t>(e) % order.size()]];
    const DrawnEpisode d = draw_episode(app, opt.steps, false, opt.controls_scale, opt.unchanged_rate, rng);
    AppEpisode ep(d.task, d.plan, false, rng);
    const std::string episode = "e" + std::to_string(e + 1);
    const std::string task = d.task.str();
    std::vector<StepMemory> memory;
    for (int s = 0; s < opt.steps && !ep.finished(); ++s) {
      const Observation cur{app.name, task, render(ep.screen()), "", ""};
      const HistoryEntry next = ep.expected();
      emit(build_history_action_prompt(cur, app.package, memory), d.task, episode, s + 1, cur, next.action, false);
      if (s + 1 == opt.steps || next.action.kind == ActionKind::Finish) break;  // nothing to summarise
      StepMemory m{next.action, next.label, ep.reason(next), ""};
      ep.apply(next);
      const Observation after{app.name, task, render(ep.screen()), "", ""};
      m.summary = step_summary(next, flatten_controls(after.tree), ep.expected(), rng);
      if (alternating) emit(build_summary_prompt(cur, after, app.package, m), d.task, episode, s + 1, cur, std::nullopt, true);
      memory.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace

std::vector<GeneratedRequest> generate_trace(const GenOptions& opt) {
  const auto& apps = app_maps();
  if (opt.episodes < 0 || opt.steps < 1) throw std::invalid_argument("episodes >= 0 and steps >= 1");
  if (!(opt.unchanged_rate >= 0 && opt.unchanged_rate <= 1)) throw std::invalid_argument("unchanged rate: 0..1");
  if (!(opt.controls_scale > 0 && opt.controls_scale <= 16)) throw std::invalid_argument("controls scale: (0, 16]");
  if (opt.trace_layout != GenOptions::Layout::Paper) {
    if (opt.screenshots != GenOptions::Screenshots::Off)
      throw std::invalid_argument("screenshots: the paper layout only");
    std::vector<GeneratedRequest> out = generate_history_trace(opt);
    check_answer_fits(out, opt.request.max_tokens);
    return out;
  }
  if (opt.single_screens < 0 || opt.single_screens > static_cast<int>(apps.size()))
    throw std::invalid_argument("single screens: 0.." + std::to_string(apps.size()) + " (one per app)");
  if (!(opt.sparse_rate >= 0 && opt.sparse_rate <= 1)) throw std::invalid_argument("sparse rate: 0..1");
  Rng rng(opt.seed);
  // Screenshots draw from their own stream (which screens are sparse), so the actions, which
  // follow the world and not the tree, are the text trace's.
  Rng shot_rng(opt.seed ^ 0x5c4ee45407a11ull);
  const bool shots = opt.screenshots != GenOptions::Screenshots::Off;
  std::vector<GeneratedRequest> out;
  int64_t minutes = 0;
  json prev_full;
  std::string prev_title;
  bool sparse = false;
  // One step: the episode's screen as the agent's tree shows it, the history so far, the action.
  auto emit = [&](const AppEpisode& ep, const std::vector<HistoryEntry>& history, const std::string& episode, int64_t step) {
    GeneratedRequest g;
    const json full = render(ep.screen());
    const bool same = !prev_full.is_null() && full == prev_full;
    // A new screen: does it draw its list on a canvas the tree does not describe? The tree then
    // lacks the rows' texts, and the agent's rule attaches a screenshot when it is sparse; a
    // canvas with too few rows to trip the rule is shown in full (the agent would not look).
    if (shots && ep.screen().title != prev_title) sparse = chance(shot_rng, opt.sparse_rate);
    json canvas;
    if (shots && sparse) canvas = render(ep.screen(), true);
    const bool stripped = shots && sparse && screen_is_sparse(canvas);
    g.observation.app = ep.task().app->name;
    g.observation.task = ep.task().str();
    g.observation.tree = stripped ? canvas : full;
    g.observation.date = date_at(opt.date, minutes);
    if (shots) {
      g.screen = full;
      // An unchanged screen (still loading) keeps the status bar's clock: the same picture.
      g.clock = same && !out.empty() ? out.back().clock : g.observation.date.substr(g.observation.date.size() - 5);
      g.screenshot = opt.screenshots == GenOptions::Screenshots::All || screen_is_sparse(g.observation.tree);
    }
    minutes += uniform(rng, 0, 2);
    g.history = history;
    const BuiltPrompt p = build_prompt(g.observation, history, opt.layout);
    g.sections = p.sections;
    g.record.body = chat_request(p, opt.request);
    g.record.episode = episode;
    g.record.step = step;
    g.record.app = ep.task().app->name;
    g.record.task = ep.task().str();
    g.record.expected_action = to_json(ep.expected().action);
    g.record.needs_image = stripped && ep.reads_rows();
    out.push_back(std::move(g));
    prev_full = full;
    prev_title = ep.screen().title;
  };

  // Single screens: one per app, in a seeded order, each a step of a path of its own task, with
  // the actions that led there as its history.
  const std::vector<size_t> order = shuffled_apps(rng);
  for (int i = 0; i < opt.single_screens; ++i) {
    const AppMap& app = apps[order[static_cast<size_t>(i)]];
    const DrawnEpisode d = draw_episode(app, 0, true, opt.controls_scale, opt.unchanged_rate, rng);
    const int len = path_length(d.task, d.plan, true, rng);
    // A step before the finish (a single screen asks for work still to do), among the first four.
    const int at = uniform(rng, 0, std::max(0, std::min(3, len - 2)));
    AppEpisode ep(d.task, d.plan, true, rng);
    std::vector<HistoryEntry> history;
    for (int k = 0; k < at; ++k) {
      history.push_back(ep.expected());
      ep.apply(history.back());
    }
    prev_title.clear();
    prev_full = json();
    emit(ep, history, "", -1);
  }

  // Episodes: distinct apps, a task each, `steps` steps on the task's path.
  const std::vector<size_t> ep_apps = shuffled_apps(rng);
  for (int e = 0; e < opt.episodes; ++e) {
    const AppMap& app = apps[ep_apps[static_cast<size_t>(e) % ep_apps.size()]];
    const DrawnEpisode d = draw_episode(app, opt.steps, true, opt.controls_scale, opt.unchanged_rate, rng);
    AppEpisode ep(d.task, d.plan, true, rng);
    minutes += uniform(rng, 3, 30);  // between tasks the phone idles
    prev_title.clear();
    prev_full = json();
    std::vector<HistoryEntry> history;
    for (int s = 0; s < opt.steps && !ep.finished(); ++s) {
      emit(ep, history, "e" + std::to_string(e + 1), s + 1);
      history.push_back(ep.expected());
      ep.apply(history.back());
    }
  }
  check_answer_fits(out, opt.request.max_tokens);
  return out;
}

}  // namespace tandem::agent
