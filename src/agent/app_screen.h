// One screen of a simulated app (issue 49) and the accessibility tree it shows. The episode
// generator keeps a screen's state here (which rows of its list are in view, what its text field
// holds, whether it is still loading) and changes it as the app reacts to an action; render()
// turns it into the tree the prompt builder reads.
//
// Layout, top to bottom: the top bar (Back unless home, the title, "More options"); a toast (the
// text that says a task is done); while loading, only a "Loading…" progress bar; else the text
// field, chips, shortcut buttons, passive info lines, switches, the list (a window of `page` rows
// from `first`, and "End of list" once the window reaches the last row), buttons, a floating
// button and the bottom tabs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::agent {

struct ListRow {
  std::string name;                  // the row's first text: what a task names
  std::vector<std::string> details;  // the texts after it ("¥129.00", "2.1 km")
};

struct ScreenSwitch {
  std::string label;
  bool on = false;
};

struct AppScreen {
  std::string title;
  bool home = false;  // no Back button; the bottom tabs, the first selected
  std::vector<std::string> tabs;
  bool loading = false;
  std::string toast;
  // The screen's one text field, if any: its placeholder, what it holds, whether it has focus.
  bool has_field = false;
  std::string field_label, field_text;
  bool focused = false;
  std::vector<std::string> chips, shortcuts, info;
  std::vector<ScreenSwitch> switches;
  // A scrollable list (has_list), or a short fixed one (plain rows, not scrollable).
  bool has_list = false, long_press_rows = false;
  std::vector<ListRow> rows;
  size_t first = 0, page = 0;
  std::vector<ListRow> plain_rows;
  std::vector<std::string> buttons;
  std::string fab;

  bool end_visible() const { return first + page >= rows.size(); }
  // The rows in view.
  std::vector<const ListRow*> visible() const;
};

// The accessibility tree (prompt_builder.h's format). `unlabelled_list`: the list's rows are drawn
// on a canvas the tree does not describe (a sparse screen): they stay clickable, without texts.
nlohmann::json render(const AppScreen& s, bool unlabelled_list = false);

}  // namespace tandem::agent
