// A task played out in a simulated app (issue 49): the episode generator's world. The app's
// screens follow its fixed navigation map (app_map.h); what varies between episodes is drawn
// here, from the generator's seeded stream: the task's target and text, what each list holds and
// where the target sits in it, how long screens take to load, whether the app opens on an
// unrelated page, a switch's state.
//
// At every step the episode knows the action a careful agent takes (expected(): the map's rules
// applied to what the screen shows) and how the app reacts to it (apply(): the next screen), so a
// trace is a path an agent could really take. The rules are the ones app_map.h states; the
// reference agent (reference_agent.h) applies them to the prompt's text alone.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "agent/app_map.h"
#include "agent/app_screen.h"
#include "agent/prompt_builder.h"

namespace tandem::agent {

// The world's free choices for one episode.
struct EpisodePlan {
  std::string detour;           // the app opens on this unrelated page (back leads home); "": home
  std::vector<int> scrolls;     // per route stage: list pages before the target (Find stages)
  std::vector<int> loading;     // per route stage: waits before its screen has loaded
  std::vector<int> page;        // per route stage: list rows in view
  bool infeasible = false;      // the target is missing from the last Find stage's list
  bool already = false;         // Toggle: the switch already shows the state asked for
};

class AppEpisode {
 public:
  // tap_first: the prompt tells the agent to tap a field before typing into it unless it is
  // focused (the paper's layout); the history layouts' prompts say input focuses it.
  AppEpisode(Task task, EpisodePlan plan, bool tap_first, std::mt19937_64& rng);

  const Task& task() const { return task_; }
  const AppScreen& screen() const { return cur_; }
  bool finished() const { return finished_; }
  // The action a careful agent takes on this screen, with the label of the control it touches
  // (indexed = false: without the index and label, which only the rendered screen gives).
  HistoryEntry expected(bool indexed = true) const;
  // Whether expected() reads the list's rows (their texts): on a screen that draws them on a
  // canvas, only the screenshot shows them.
  bool reads_rows() const;
  // The app's reaction: the next screen.
  void apply(const HistoryEntry& step);
  // What the agent would say it does and why (the growing layout's "Reason:").
  std::string reason(const HistoryEntry& step) const;

 private:
  void enter(int stage);
  void enter_goal();
  AppScreen build(int stage);
  int stage_index(const std::string& title) const;

  Task task_;
  EpisodePlan plan_;
  bool tap_first_;
  std::mt19937_64& rng_;
  std::vector<AppScreen> built_;  // each stage's screen as first shown
  std::vector<bool> has_built_;
  AppScreen cur_;
  int at_ = -1;          // the route stage on screen; -1: the detour page
  int pending_wait_ = 0; // waits left before the screen has loaded
  bool goal_ = false, finished_ = false;
};

// Draws a task of `app` (templates by weight; targets and texts uniformly) and a plan whose path
// takes exactly `steps` actions, the last one a finish; when no task of the app fits, the
// shortest path is drawn (and is cut at `steps` by the caller). `unchanged_rate`: the chance that
// a loading screen still loads after the first wait. steps <= 0: any length (a few extra
// actions at random).
struct DrawnEpisode {
  Task task;
  EpisodePlan plan;
};
DrawnEpisode draw_episode(const AppMap& app, int steps, bool tap_first, double controls_scale, double unchanged_rate,
                          std::mt19937_64& rng);

// How many actions the episode's path takes to its finish (runs a copy to the end).
int path_length(const Task& task, const EpisodePlan& plan, bool tap_first, std::mt19937_64 rng);

}  // namespace tandem::agent
