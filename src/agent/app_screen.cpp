#include "agent/app_screen.h"

#include <algorithm>

#include "agent/app_map.h"

namespace tandem::agent {

using json = nlohmann::json;

namespace {

json node(const char* cls, const std::string& text, bool clickable = false) {
  json n = {{"class", std::string("android.widget.") + cls}};
  if (!text.empty()) n["text"] = text;
  if (clickable) n["clickable"] = true;
  return n;
}
json desc_button(const std::string& desc, const std::string& id) {
  return json{{"class", "android.widget.ImageButton"}, {"content_desc", desc}, {"resource_id", id}, {"clickable", true}};
}

json row_node(const ListRow& r, bool long_press, bool unlabelled) {
  json row = {{"class", "android.widget.LinearLayout"}, {"clickable", true}};
  if (long_press) row["long_clickable"] = true;
  if (unlabelled) return row;
  row["children"] = json::array();
  row["children"].push_back(node("TextView", r.name));
  for (const std::string& d : r.details) row["children"].push_back(node("TextView", d));
  return row;
}

}  // namespace

std::vector<const ListRow*> AppScreen::visible() const {
  std::vector<const ListRow*> v;
  for (size_t i = first; i < rows.size() && i < first + page; ++i) v.push_back(&rows[i]);
  return v;
}

json render(const AppScreen& s, bool unlabelled_list) {
  json root = {{"class", "android.widget.FrameLayout"}, {"children", json::array()}};
  json& kids = root["children"];
  json top = {{"class", "android.view.ViewGroup"}, {"children", json::array()}};
  if (!s.home) top["children"].push_back(desc_button("Back", "back"));
  top["children"].push_back(node("TextView", s.title));
  top["children"].push_back(desc_button("More options", "menu"));
  kids.push_back(top);
  if (!s.toast.empty()) {
    json t = node("TextView", s.toast);
    t["resource_id"] = "toast";
    kids.push_back(t);
  }
  if (s.loading) {
    kids.push_back(json{{"class", "android.widget.ProgressBar"}, {"text", std::string(kLoadingText)}, {"resource_id", "progress"}});
    return root;
  }
  if (s.has_field) {
    json f = {{"class", "android.widget.EditText"},
              {"text", s.field_text.empty() ? s.field_label : s.field_text},
              {"resource_id", "input"},
              {"clickable", true},
              {"editable", true}};
    if (s.focused) f["focused"] = true;
    kids.push_back(f);
  }
  if (!s.chips.empty()) {
    json chips = {{"class", "android.widget.HorizontalScrollView"}, {"scrollable", true}, {"children", json::array()}};
    for (const std::string& c : s.chips) chips["children"].push_back(node("TextView", c, true));
    kids.push_back(chips);
  }
  for (const std::string& b : s.shortcuts) kids.push_back(node("Button", b, true));
  for (const std::string& i : s.info) kids.push_back(node("TextView", i));
  for (const ScreenSwitch& w : s.switches)
    kids.push_back(json{{"class", "android.widget.Switch"}, {"text", w.label}, {"checkable", true}, {"checked", w.on}, {"clickable", true}});
  if (!s.plain_rows.empty()) {
    json box = {{"class", "android.widget.LinearLayout"}, {"children", json::array()}};
    for (const ListRow& r : s.plain_rows) box["children"].push_back(row_node(r, false, false));
    kids.push_back(box);
  }
  if (s.has_list) {
    json list = {{"class", "androidx.recyclerview.widget.RecyclerView"}, {"scrollable", true}, {"resource_id", "list"},
                 {"children", json::array()}};
    for (const ListRow* r : s.visible()) list["children"].push_back(row_node(*r, s.long_press_rows, unlabelled_list));
    // The marker stays text on a sparse screen: the canvas draws the rows, the list view its end.
    if (s.end_visible()) list["children"].push_back(node("TextView", std::string(kEndOfList)));
    kids.push_back(list);
  }
  for (const std::string& b : s.buttons) kids.push_back(node("Button", b, true));
  if (!s.fab.empty()) kids.push_back(desc_button(s.fab, "fab"));
  if (!s.tabs.empty()) {
    json nav = {{"class", "android.widget.LinearLayout"}, {"resource_id", "bottom_nav"}, {"children", json::array()}};
    for (size_t i = 0; i < s.tabs.size(); ++i) {
      json t = node("TextView", s.tabs[i], true);
      if (i == 0 && s.home) t["selected"] = true;
      nav["children"].push_back(t);
    }
    kids.push_back(nav);
  }
  return root;
}

}  // namespace tandem::agent
