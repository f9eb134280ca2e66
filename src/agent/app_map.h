// The apps' fixed navigation maps (issue 49): what a person who knows an app knows, the same in
// every episode. The episode generator builds its screens and paths from them, and the reference
// agent (reference_agent.h) reads them beside the prompt; nothing that varies between episodes
// (which task, which target, where things are on the screen, what a list holds) is here.
//
// A task is a template with slots, filled per episode: "Add {target} to the cart" with {target}
// drawn from the app's pool of targets, "Send \"{text}\" to {target}" with {text} drawn from the
// app's texts. Its route is a list of stages, each naming the screen it acts on by the title that
// screen shows (the top bar's text) and what to do there:
//
//   Tap       tap the control whose text is `label`
//   Search    the screen's search field: tap it unless focused (the paper's prompt says so),
//             then type the query, the task's {target}; the results screen follows
//   Find      find the list row whose first text is the target: tap it (LongPress: long-press
//             it); not on screen: scroll the list down; the list shows "End of list" without it:
//             the task is infeasible
//   Compose   the field whose placeholder is `label`: tap it unless focused (paper), type the
//             task's {text}, then tap `send` once the field shows the text
//   Toggle    the switch whose text is `label`: tap it until it shows the task's state
//
// and, before any stage: a screen that says "Loading…" is waited for; a screen that shows the
// task's `done` text is the goal reached (finish, success); a screen whose title no stage names
// cannot lead to the goal (back).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::agent {

enum class StageOp { Tap, Search, Find, LongPress, Compose, Toggle };

struct Stage {
  std::string screen;  // the title of the screen this stage acts on; "{app}": the home screen
  StageOp op = StageOp::Tap;
  std::string label;   // Tap: the control's text; Search / Compose: the field's placeholder;
                       // Toggle: the switch's text ("{target}" is replaced)
  std::string send;    // Compose: the button that sends what was typed
};

// One target of a pool: its name as the list row and the task show it, and, for targets
// reached through a group (a setting inside a Settings section), the group's row.
struct Target {
  std::string name;
  std::string group;
};

struct TaskTemplate {
  std::string pattern;       // "Add {target} to the cart"; slots {target}, {text}, {state}
  std::vector<Stage> route;  // in the order a path visits them
  std::string done;          // the text the screen shows when the goal is reached; empty: the
                             // target's own page is the goal (Toggle: the switch's state is)
  int weight = 1;            // how often episodes draw it, relative to the app's other tasks
  std::vector<Target> targets;    // what {target} is drawn from, when not the app's pool
  std::vector<std::string> texts;  // what {text} is drawn from, when not the app's texts

  TaskTemplate(std::string pattern_, std::vector<Stage> route_, std::string done_, int weight_,
               std::vector<Target> targets_ = {}, std::vector<std::string> texts_ = {})
      : pattern(std::move(pattern_)), route(std::move(route_)), done(std::move(done_)), weight(weight_),
        targets(std::move(targets_)), texts(std::move(texts_)) {}
};

struct AppMap {
  std::string name;      // the home screen's title
  std::string package;
  std::vector<std::string> tabs;     // the home screen's bottom tabs (may be empty)
  std::vector<std::string> shortcuts;  // buttons on the home screen (a Tap stage may name one)
  bool search = false;   // the home screen has a search field
  std::vector<TaskTemplate> tasks;
  std::vector<Target> targets;       // what {target} is drawn from (and list rows besides)
  std::vector<std::string> texts;    // what {text} is drawn from
};

// A template's pools: its own, else the app's.
const std::vector<Target>& targets_of(const AppMap& app, const TaskTemplate& t);
const std::vector<std::string>& texts_of(const AppMap& app, const TaskTemplate& t);

// The 21 apps, in a fixed order.
const std::vector<AppMap>& app_maps();
const AppMap* find_app_by_name(std::string_view name);
const AppMap* find_app_by_package(std::string_view package);

// The fixed texts every app's screens use.
inline constexpr std::string_view kLoadingText = "Loading…";
inline constexpr std::string_view kEndOfList = "End of list";
inline constexpr std::string_view kSearchTitle = "Search";
inline constexpr std::string_view kResultsTitle = "Results";
inline constexpr std::string_view kFinishSuccess = "Done";
inline constexpr std::string_view kFinishInfeasible = "Not found";
inline constexpr double kWaitSeconds = 2;

// A task drawn for an episode: its template and the slots' values.
struct Task {
  const AppMap* app = nullptr;
  const TaskTemplate* tmpl = nullptr;
  std::string target, group, text;
  bool on = true;  // Toggle: the state asked for

  std::string str() const;  // the task as the prompt shows it
  // A stage's screen title and label with the slots filled in.
  std::string screen_of(const Stage& s) const;
  std::string label_of(const Stage& s) const;
  // The text typed at a stage: Search types the target, Compose the text.
  std::string typed_at(const Stage& s) const;
};

// Reads a task back from its text: the template of `app` it fills and the slots' values (the group
// from the target's pool entry). False when no template matches.
bool parse_task(const AppMap& app, std::string_view text, Task& out);

}  // namespace tandem::agent
