#include "agent/episode_gen.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <stdexcept>

namespace tandem::agent {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

enum class Kind { Shop, Chat, Map, Video, Music, Travel, Settings, Clock, Calendar, Social, Pay };

struct App {
  const char* name;
  const char* package;
  Kind kind;
  std::vector<const char*> tabs;
  std::vector<const char*> tasks;
  std::vector<const char*> queries;  // what the episode types
};

const std::vector<App>& apps() {
  static const std::vector<App> a = {
      {"WeChat", "com.tencent.mm", Kind::Chat, {"Chats", "Contacts", "Discover", "Me"},
       {"Send \"I'll be ten minutes late\" to Li Wei", "Open the group chat Project Team and read the pinned note"},
       {"Li Wei", "Project Team"}},
      {"Alipay", "com.eg.android.AlipayGphone", Kind::Pay, {"Home", "Wealth", "Messages", "Me"},
       {"Check the balance of my Yu'e Bao account", "Find last month's electricity bill payment"},
       {"electricity", "Yu'e Bao"}},
      {"Taobao", "com.taobao.taobao", Kind::Shop, {"Home", "Videos", "Messages", "Cart", "Me"},
       {"Search for a USB-C charging cable and add the cheapest one to the cart",
        "Find wireless earbuds under 200 yuan with good reviews"},
       {"USB-C cable", "wireless earbuds"}},
      {"JD", "com.jingdong.app.mall", Kind::Shop, {"Home", "New", "Cart", "Me"},
       {"Reorder the paper towels from my last order", "Search for a 1.5 L electric kettle and open the top result"},
       {"paper towels", "electric kettle"}},
      {"Meituan", "com.sankuai.meituan", Kind::Shop, {"Home", "Orders", "Messages", "Me"},
       {"Order a large iced latte from the nearest Luckin Coffee", "Find a hot pot restaurant open after 10 pm"},
       {"Luckin Coffee", "hot pot"}},
      {"Dianping", "com.dianping.v1", Kind::Travel, {"Home", "Deals", "Messages", "Me"},
       {"Find the best rated noodle shop within 1 km", "Look up the opening hours of Haidilao near the office"},
       {"noodles", "Haidilao"}},
      {"Amap", "com.autonavi.minimap", Kind::Map, {"Home", "Nearby", "Messages", "Me"},
       {"Start walking navigation to the nearest subway station", "Find a parking lot near Xidan Joy City"},
       {"subway station", "parking"}},
      {"DiDi", "com.sdu.didi.psnger", Kind::Map, {"Ride", "Bike", "Trips", "Me"},
       {"Call an express car to Beijing South Railway Station", "Check the fare of my last trip"},
       {"Beijing South Railway Station", "airport"}},
      {"Douyin", "com.ss.android.ugc.aweme", Kind::Video, {"Home", "Friends", "Inbox", "Me"},
       {"Search for cooking videos about mapo tofu and like the first one", "Open my saved videos"},
       {"mapo tofu", "city walk"}},
      {"Bilibili", "tv.danmaku.bili", Kind::Video, {"Home", "Following", "Shop", "Me"},
       {"Find the latest episode of the science channel I follow", "Add a video about piano basics to Watch Later"},
       {"piano basics", "science"}},
      {"Xiaohongshu", "com.xingin.xhs", Kind::Social, {"Home", "Market", "Messages", "Me"},
       {"Search for weekend hiking routes near Hangzhou and save a note", "Check new comments on my last post"},
       {"hiking Hangzhou", "desk setup"}},
      {"Weibo", "com.sina.weibo", Kind::Social, {"Home", "Video", "Discover", "Messages", "Me"},
       {"Read the top trending topic", "Post \"Good morning\" with no picture"},
       {"weather", "trending"}},
      {"Zhihu", "com.zhihu.android", Kind::Social, {"Home", "Following", "Messages", "Me"},
       {"Find an answer about learning Rust and upvote it", "Open my bookmarks"},
       {"learning Rust", "sleep schedule"}},
      {"Ctrip", "ctrip.android.view", Kind::Travel, {"Home", "Messages", "Trips", "Me"},
       {"Find a hotel in Shanghai for Friday night under 500 yuan", "Check the status of my flight to Chengdu"},
       {"Shanghai hotel", "Chengdu flight"}},
      {"12306", "com.MobileTicket", Kind::Travel, {"Home", "Travel", "Orders", "Me"},
       {"Search for high-speed trains from Beijing to Tianjin tomorrow morning", "Open my unpaid orders"},
       {"Beijing Tianjin", "Nanjing"}},
      {"NetEase Music", "com.netease.cloudmusic", Kind::Music, {"Discover", "Podcasts", "Library", "Me"},
       {"Play my daily recommended songs", "Search for Jay Chou and play the top song"},
       {"Jay Chou", "lofi"}},
      {"QQ Music", "com.tencent.qqmusic", Kind::Music, {"Home", "Videos", "Library", "Me"},
       {"Add the song Qing Tian to my favorites", "Open the chart of new songs"},
       {"Qing Tian", "new songs"}},
      {"Baidu", "com.baidu.searchbox", Kind::Social, {"Home", "Videos", "Tasks", "Me"},
       {"Search for tomorrow's weather in Beijing", "Look up the exchange rate of USD to CNY"},
       {"Beijing weather", "USD CNY"}},
      {"Settings", "com.android.settings", Kind::Settings, {},
       {"Turn on dark mode", "Set the screen timeout to 2 minutes"},
       {"dark mode", "screen timeout"}},
      {"Clock", "com.android.deskclock", Kind::Clock, {"Alarm", "World clock", "Stopwatch", "Timer"},
       {"Set an alarm for 7:00 tomorrow", "Start a 10 minute timer"},
       {"7:00", "10 min"}},
      {"Calendar", "com.android.calendar", Kind::Calendar, {"Day", "Week", "Month", "Schedule"},
       {"Add a dentist appointment on Thursday at 3 pm", "Check what is scheduled for Friday"},
       {"dentist", "Friday"}},
  };
  return a;
}

// Word pools for list items.
const char* kProducts[] = {"USB-C Cable 1m", "Fast Charger 65W", "Wireless Earbuds", "Phone Case", "Power Bank 10000mAh",
                           "Desk Lamp", "Electric Kettle", "Paper Towels 12 Rolls", "Water Bottle", "Backpack",
                           "Running Shoes", "Instant Noodles x24", "Green Tea 500g", "Coffee Beans", "Notebook A5"};
const char* kNames[] = {"Li Wei", "Wang Fang", "Zhang Min", "Liu Yang", "Chen Jie", "Project Team", "Family",
                        "Zhao Lei", "Huang Ting", "Sun Hao", "Zhou Xin", "Badminton Club", "Mom", "Landlord"};
const char* kMessages[] = {"See you at 7", "OK, sent", "[Photo]", "Thanks!", "Meeting moved to 3 pm", "[Voice 12\"]",
                           "Happy birthday!", "Where are you?", "The file is in the group", "Sounds good"};
const char* kPlaces[] = {"Xidan Station", "Joy City Mall", "Starbucks Reserve", "Peking Union Hospital", "Chaoyang Park",
                         "Sanlitun", "Guomao Station", "Wudaokou", "Line 4 Exit B", "Parking Lot P2", "Luckin Coffee"};
const char* kVideos[] = {"Mapo tofu in 5 minutes", "City walk: Chengdu at night", "Piano basics lesson 1",
                         "Why the sky is blue", "Cat vs cucumber", "Street food tour", "Desk setup 2026",
                         "Hiking the West Lake hills", "Phone camera tricks", "Morning stretch routine"};
const char* kSongs[] = {"Qing Tian", "Dao Xiang", "Rainy Day", "Lofi Study Mix", "Sunny Day", "Hometown",
                        "Ordinary Road", "Night Drive", "Blue Sky", "Little Lucky"};
const char* kArtists[] = {"Jay Chou", "G.E.M.", "Eason Chan", "Faye Wong", "Mayday", "Pu Shu", "JJ Lin"};
const char* kHotels[] = {"Hanting Hotel People's Square", "Atour Hotel Bund", "Ji Hotel Jing'an", "Home Inn Xujiahui",
                         "G1234 08:00", "G5 07:35", "G101 06:30", "C2001 09:10", "MU5401 10:20", "CA4105 14:05"};
const char* kSettings[] = {"Wi-Fi", "Bluetooth", "Mobile network", "Display", "Dark mode", "Screen timeout",
                           "Battery", "Sound & vibration", "Notifications", "Apps", "Storage", "Privacy",
                           "Location", "Accessibility", "System"};
const char* kEvents[] = {"Team standup", "Dentist", "Lunch with Wang Fang", "Gym", "Project review", "Flight to Chengdu",
                         "Badminton", "Call Mom", "Rent due", "Yoga class"};
const char* kPosts[] = {"Weekend hiking route near Hangzhou", "My desk setup for 2026", "Best noodles in town",
                        "How I learned Rust in a month", "Tomorrow's weather: light rain", "Budget travel tips",
                        "Sleep schedule that works", "Top 10 trending topics", "Cafe with a view", "Exchange rate today"};

template <size_t N>
const char* pick(std::mt19937_64& rng, const char* (&pool)[N]) {
  return pool[std::uniform_int_distribution<size_t>(0, N - 1)(rng)];
}
int uniform(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool chance(std::mt19937_64& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

json node(const char* cls, std::string text, bool clickable = false) {
  json n = {{"class", std::string("android.widget.") + cls}};
  if (!text.empty()) n["text"] = std::move(text);
  if (clickable) n["clickable"] = true;
  return n;
}
json desc_button(const char* cls, const std::string& desc, const std::string& id) {
  return json{{"class", std::string("android.widget.") + cls}, {"content_desc", desc}, {"resource_id", id}, {"clickable", true}};
}

std::string price(std::mt19937_64& rng) {
  char b[32];
  std::snprintf(b, sizeof b, "¥%d.%02d", uniform(rng, 5, 399), uniform(rng, 0, 99));
  return b;
}

// One list item of the app's kind: a clickable container with one to three text children.
json list_item(const App& app, std::mt19937_64& rng) {
  json row = {{"class", "android.widget.LinearLayout"}, {"clickable", true}, {"children", json::array()}};
  auto& ch = row["children"];
  char b[96];
  switch (app.kind) {
    case Kind::Shop:
      ch.push_back(node("TextView", pick(rng, kProducts)));
      ch.push_back(node("TextView", price(rng)));
      std::snprintf(b, sizeof b, "%d sold", uniform(rng, 10, 9000));
      ch.push_back(node("TextView", b));
      break;
    case Kind::Chat:
      ch.push_back(node("TextView", pick(rng, kNames)));
      ch.push_back(node("TextView", pick(rng, kMessages)));
      std::snprintf(b, sizeof b, "%02d:%02d", uniform(rng, 7, 22), uniform(rng, 0, 59));
      ch.push_back(node("TextView", b));
      break;
    case Kind::Map:
      ch.push_back(node("TextView", pick(rng, kPlaces)));
      std::snprintf(b, sizeof b, "%.1f km", uniform(rng, 1, 80) / 10.0);
      ch.push_back(node("TextView", b));
      break;
    case Kind::Video:
      ch.push_back(node("TextView", pick(rng, kVideos)));
      std::snprintf(b, sizeof b, "%d.%dK views", uniform(rng, 1, 999), uniform(rng, 0, 9));
      ch.push_back(node("TextView", b));
      break;
    case Kind::Music:
      ch.push_back(node("TextView", pick(rng, kSongs)));
      ch.push_back(node("TextView", pick(rng, kArtists)));
      ch.push_back(desc_button("ImageButton", "More options", "more"));
      break;
    case Kind::Travel:
      ch.push_back(node("TextView", pick(rng, kHotels)));
      ch.push_back(node("TextView", price(rng)));
      std::snprintf(b, sizeof b, "%.1f rating", uniform(rng, 35, 50) / 10.0);
      ch.push_back(node("TextView", b));
      break;
    case Kind::Settings: {
      ch.push_back(node("TextView", pick(rng, kSettings)));
      json sw = {{"class", "android.widget.Switch"}, {"checkable", true}, {"checked", chance(rng, 0.5)}, {"clickable", true}};
      if (chance(rng, 0.4)) ch.push_back(sw);
      break;
    }
    case Kind::Clock: {
      std::snprintf(b, sizeof b, "%02d:%02d", uniform(rng, 5, 23), uniform(rng, 0, 11) * 5);
      ch.push_back(node("TextView", b));
      ch.push_back(node("TextView", chance(rng, 0.5) ? "Mon, Tue, Wed, Thu, Fri" : "Tomorrow"));
      ch.push_back(json{{"class", "android.widget.Switch"}, {"checkable", true}, {"checked", chance(rng, 0.5)}, {"clickable", true}});
      break;
    }
    case Kind::Calendar:
      ch.push_back(node("TextView", pick(rng, kEvents)));
      std::snprintf(b, sizeof b, "%02d:00 - %02d:30", uniform(rng, 8, 17), uniform(rng, 9, 19));
      ch.push_back(node("TextView", b));
      break;
    case Kind::Social:
    case Kind::Pay:
      ch.push_back(node("TextView", pick(rng, kPosts)));
      std::snprintf(b, sizeof b, "%d likes", uniform(rng, 1, 5000));
      ch.push_back(node("TextView", b));
      break;
  }
  return row;
}

// A screen of the app: top bar, optional search box and chips, a list, the bottom tabs.
json screen(const App& app, std::mt19937_64& rng, int depth, double scale) {
  json root = {{"class", "android.widget.FrameLayout"}, {"children", json::array()}};
  auto& kids = root["children"];
  json top = {{"class", "android.view.ViewGroup"}, {"children", json::array()}};
  if (depth > 0) top["children"].push_back(desc_button("ImageButton", "Back", "back"));
  top["children"].push_back(node("TextView", depth == 0 ? std::string(app.name) : std::string(app.tabs.empty() ? "Settings" : app.tabs[0])));
  top["children"].push_back(desc_button("ImageButton", "More options", "menu"));
  kids.push_back(top);
  if (app.kind != Kind::Clock && app.kind != Kind::Calendar && (depth <= 1 || chance(rng, 0.4))) {
    kids.push_back(json{{"class", "android.widget.EditText"}, {"text", "Search"}, {"resource_id", "search_box"},
                        {"clickable", true}, {"editable", true}});
    if (chance(rng, 0.6)) {
      json chips = {{"class", "android.widget.HorizontalScrollView"}, {"scrollable", true}, {"children", json::array()}};
      const int n = uniform(rng, 2, 4);
      for (int i = 0; i < n; ++i) chips["children"].push_back(node("TextView", std::string(app.queries[static_cast<size_t>(i) % app.queries.size()]) + (i >= 2 ? " deals" : ""), true));
      kids.push_back(chips);
    }
  }
  json list = {{"class", "androidx.recyclerview.widget.RecyclerView"}, {"scrollable", true}, {"resource_id", "list"},
               {"children", json::array()}};
  const int items = std::max(1, static_cast<int>(uniform(rng, 6, 9) * scale + 0.5));
  for (int i = 0; i < items; ++i) list["children"].push_back(list_item(app, rng));
  kids.push_back(list);
  if (app.kind == Kind::Clock || app.kind == Kind::Calendar)
    kids.push_back(desc_button("ImageButton", app.kind == Kind::Clock ? "Add alarm" : "New event", "fab"));
  if (!app.tabs.empty()) {
    json nav = {{"class", "android.widget.LinearLayout"}, {"resource_id", "bottom_nav"}, {"children", json::array()}};
    for (size_t i = 0; i < app.tabs.size(); ++i) {
      json t = node("TextView", app.tabs[i], true);
      if (i == 0 && depth == 0) t["selected"] = true;
      nav["children"].push_back(t);
    }
    kids.push_back(nav);
  }
  return root;
}

// The action an agent would take on this screen at this point of its episode.
HistoryEntry choose_action(const std::vector<Control>& controls, const App& app, const std::string& query, int step,
                           int last, bool& typed, std::mt19937_64& rng) {
  HistoryEntry h;
  if (step == last) {
    h.action.kind = ActionKind::Finish;
    h.action.status = FinishStatus::Success;
    h.action.text = "Done";
    return h;
  }
  auto find = [&](auto pred) -> const Control* {
    for (const Control& c : controls)
      if (pred(c)) return &c;
    return nullptr;
  };
  const Control* search = find([](const Control& c) { return c.editable; });
  if (!typed && search && step <= 2) {
    if (step == 0 || !chance(rng, 0.5)) {
      if (!search->focused && step == 0) {
        h.action.kind = ActionKind::Tap;
        h.action.index = search->index;
        h.label = search->text;
        return h;
      }
    }
    h.action.kind = ActionKind::Input;
    h.action.index = search->index;
    h.action.text = query;
    h.label = search->text;
    typed = true;
    return h;
  }
  const double r = std::uniform_real_distribution<double>(0, 1)(rng);
  if (r < 0.12) {
    h.action.kind = ActionKind::Scroll;
    h.action.direction = Direction::Down;
    const Control* list = find([](const Control& c) { return c.scrollable; });
    if (list) h.action.index = list->index;
    return h;
  }
  if (r < 0.17) {
    h.action.kind = ActionKind::Back;
    return h;
  }
  if (r < 0.20) {
    h.action.kind = ActionKind::Wait;
    h.action.seconds = 2;
    return h;
  }
  std::vector<const Control*> taps;
  for (const Control& c : controls)
    if (c.clickable && !c.text.empty() && !c.editable) taps.push_back(&c);
  if (taps.empty()) {
    h.action.kind = ActionKind::Back;
    return h;
  }
  const Control* c = taps[std::uniform_int_distribution<size_t>(0, taps.size() - 1)(rng)];
  h.action.kind = chance(rng, 0.05) ? ActionKind::LongPress : ActionKind::Tap;
  h.action.index = c->index;
  h.label = c->text;
  (void)app;
  return h;
}

// Labels of controls that a synthetic earlier action may have touched (single screens).
HistoryEntry random_past_action(const App& app, std::mt19937_64& rng) {
  HistoryEntry h;
  const int r = uniform(rng, 0, 9);
  if (r <= 5) {
    h.action.kind = ActionKind::Tap;
    h.action.index = uniform(rng, 0, 25);
    h.label = app.tabs.empty() ? pick(rng, kSettings) : app.tabs[static_cast<size_t>(uniform(rng, 0, static_cast<int>(app.tabs.size()) - 1))];
  } else if (r <= 7) {
    h.action.kind = ActionKind::Input;
    h.action.index = uniform(rng, 1, 3);
    h.action.text = app.queries[0];
    h.label = "Search";
  } else if (r == 8) {
    h.action.kind = ActionKind::Scroll;
    h.action.direction = Direction::Down;
  } else {
    h.action.kind = ActionKind::OpenApp;
    h.action.text = app.name;
  }
  return h;
}

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
json strip_list_content(json tree) {
  if (!tree.contains("children")) return tree;
  for (json& kid : tree["children"])
    if (kid.value("resource_id", "") == "list" && kid.contains("children"))
      for (json& row : kid["children"]) row.erase("children");
  return tree;
}


// Issue 30: the words of a growing-history agent's memory. The reason is what the action prompt's
// answer says before the action; the summary is the summary prompt's answer, and it quotes what
// the screen after the action shows (so history lines differ from episode to episode).
const char* kReasonLead[] = {"To make progress on the goal", "Following the plan from the last step",
                             "The current screen is the right place for this", "Looking at the element list",
                             "Since the previous action worked as expected"};
const char* kSummaryNext[] = {"The next step is to pick the matching entry from the list.",
                              "Next I should confirm the choice on the following screen.",
                              "If the item is still not visible, scroll the list once more before going back.",
                              "The task looks close to done; check the result before finishing.",
                              "This did not change much, so another way may be needed next time."};

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

std::string step_reason(const HistoryEntry& h, const std::string& task, std::mt19937_64& rng) {
  std::string r = std::string(pick(rng, kReasonLead)) + " (" + lower_first(task) + "), ";
  switch (h.action.kind) {
    case ActionKind::Tap:
    case ActionKind::LongPress: r += "the element \"" + h.label + "\" is the one that leads there, so I select it."; break;
    case ActionKind::Input: r += "I type the query \"" + h.action.text + "\" into the search field."; break;
    case ActionKind::Scroll: r += "the item I need is not on the screen yet, so I scroll the list down."; break;
    case ActionKind::Back: r += "this screen is a dead end, so I go back to the previous one."; break;
    case ActionKind::Wait: r += "the screen is still loading, so I wait for it."; break;
    default: r += "this action is the next one the task needs."; break;
  }
  return r;
}

std::string step_summary(const HistoryEntry& h, const std::vector<Control>& after, std::mt19937_64& rng) {
  std::string s;
  switch (h.action.kind) {
    case ActionKind::Tap: s = "I tapped \"" + h.label + "\" and a new screen opened"; break;
    case ActionKind::LongPress: s = "I long-pressed \"" + h.label + "\" and a menu opened"; break;
    case ActionKind::Input: s = "I typed \"" + h.action.text + "\" into the search box and results appeared"; break;
    case ActionKind::Scroll: s = "I scrolled the list down and more items came into view"; break;
    case ActionKind::Back: s = "I went back to the previous screen"; break;
    case ActionKind::Wait: s = "I waited two seconds and the screen finished loading"; break;
    default: s = "The action was performed"; break;
  }
  // Quote two or three texts the new screen shows (what a model summarising it would mention).
  std::vector<const Control*> texts;
  for (const Control& c : after)
    if (!c.text.empty() && !c.editable && c.text.size() > 3) texts.push_back(&c);
  if (!texts.empty()) {
    s += "; it shows ";
    const int n = std::min(static_cast<int>(texts.size()), uniform(rng, 2, 3));
    const size_t first = std::uniform_int_distribution<size_t>(0, texts.size() - 1)(rng);
    for (int k = 0; k < n; ++k) {
      if (k) s += k + 1 == n ? " and " : ", ";
      s += "\"" + texts[(first + static_cast<size_t>(k)) % texts.size()]->text + "\"";
    }
  }
  s += ". ";
  s += pick(rng, kSummaryNext);
  return s;
}

// The order in which episodes visit the apps (a shuffle of all) and an episode's task: both
// generators draw them the same way, from the same stream.
std::vector<size_t> episode_apps(size_t n_apps, std::mt19937_64& rng) {
  std::vector<size_t> order(n_apps);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

struct EpisodeTask {
  std::string task, query, episode;
};

EpisodeTask episode_task(const App& app, int e, std::mt19937_64& rng) {
  const size_t t = static_cast<size_t>(uniform(rng, 0, static_cast<int>(app.tasks.size()) - 1));
  return EpisodeTask{app.tasks[t], app.queries[t % app.queries.size()], "e" + std::to_string(e + 1)};
}

}  // namespace

namespace {
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
}  // namespace

bool screen_is_sparse(const json& tree) { return unlabelled_clickables(tree) >= 3; }

std::vector<std::string> generator_apps() {
  std::vector<std::string> out;
  for (const App& a : apps()) out.emplace_back(a.name);
  return out;
}

namespace {

// Issue 30's layouts: episodes of a growing-history agent (history_prompt.h). One screen per step
// and the screen after it (the summary prompt needs both), drawn from the same generators as the
// paper layout.
std::vector<GeneratedRequest> generate_history_trace(const GenOptions& opt, const std::vector<App>& all) {
  std::mt19937_64 rng(opt.seed);
  std::vector<GeneratedRequest> out;
  const bool alternating = opt.trace_layout == GenOptions::Layout::Alternating;
  auto emit = [&](const BuiltPrompt& p, const App& app, const std::string& task, const std::string& episode,
                  int64_t step, const Observation& obs, const std::optional<Action>& expected, bool summary) {
    GeneratedRequest g;
    g.observation = obs;
    g.sections = p.sections;
    g.record.body = chat_request(p, opt.request);
    g.record.episode = episode;
    g.record.step = step;
    g.record.app = app.name;
    g.record.task = task;
    if (expected) g.record.expected_action = to_json(*expected);
    g.summary = summary;
    out.push_back(std::move(g));
  };
  const std::vector<size_t> ep_apps = episode_apps(all.size(), rng);
  for (int e = 0; e < opt.episodes; ++e) {
    const App& app = all[ep_apps[static_cast<size_t>(e) % ep_apps.size()]];
    const auto [task, query, episode] = episode_task(app, e, rng);
    std::vector<StepMemory> memory;
    bool typed = false;
    Observation cur{app.name, task, screen(app, rng, 0, opt.controls_scale), "", ""};
    for (int s = 0; s < opt.steps; ++s) {
      const std::vector<Control> controls = flatten_controls(cur.tree);
      const HistoryEntry next = choose_action(controls, app, query, s, opt.steps - 1, typed, rng);
      emit(build_history_action_prompt(cur, app.package, memory), app, task, episode, s + 1, cur, next.action, false);
      if (s + 1 == opt.steps) break;  // the last step finishes the task: nothing to summarise
      StepMemory m{next.action, next.label, step_reason(next, task, rng), ""};
      Observation after{app.name, task, screen(app, rng, std::min(s + 1, 2), opt.controls_scale), "", ""};
      m.summary = step_summary(next, flatten_controls(after.tree), rng);
      if (alternating)
        emit(build_summary_prompt(cur, after, app.package, m), app, task, episode, s + 1, cur, std::nullopt, true);
      memory.push_back(std::move(m));
      cur = std::move(after);
    }
  }
  return out;
}

}  // namespace

std::vector<GeneratedRequest> generate_trace(const GenOptions& opt) {
  const auto& all = apps();
  if (opt.trace_layout != GenOptions::Layout::Paper) {
    if (opt.episodes < 0 || opt.steps < 1) throw std::invalid_argument("episodes >= 0 and steps >= 1");
    if (opt.screenshots != GenOptions::Screenshots::Off)
      throw std::invalid_argument("screenshots: the paper layout only");
    return generate_history_trace(opt, all);
  }
  if (opt.single_screens < 0 || opt.single_screens > static_cast<int>(all.size()))
    throw std::invalid_argument("single screens: 0.." + std::to_string(all.size()) + " (one per app)");
  if (opt.episodes < 0 || opt.steps < 1) throw std::invalid_argument("episodes >= 0 and steps >= 1");
  if (!(opt.sparse_rate >= 0 && opt.sparse_rate <= 1)) throw std::invalid_argument("sparse rate: 0..1");
  if (!(opt.unchanged_rate >= 0 && opt.unchanged_rate <= 1)) throw std::invalid_argument("unchanged rate: 0..1");
  std::mt19937_64 rng(opt.seed);
  // Screenshots draw from their own stream: which screens are sparse.
  std::mt19937_64 shot_rng(opt.seed ^ 0x5c4ee45407a11ull);
  const bool shots = opt.screenshots != GenOptions::Screenshots::Off;
  std::vector<GeneratedRequest> out;
  int64_t minutes = 0;
  // The full screen (what a screenshot draws) -> the accessibility tree the agent reads.
  auto observe = [&](const json& full, bool sparse) { return sparse ? strip_list_content(full) : full; };
  auto emit = [&](const App& app, const std::string& task, json tree, const std::vector<HistoryEntry>& history,
                  const std::string& episode, int64_t step, const std::optional<Action>& expected, const json& full,
                  const std::string& clock) {
    GeneratedRequest g;
    g.observation.app = app.name;
    g.observation.task = task;
    g.observation.tree = std::move(tree);
    g.observation.date = date_at(opt.date, minutes);
    if (shots) {
      g.screen = full;
      g.clock = clock.empty() ? g.observation.date.substr(g.observation.date.size() - 5) : clock;
      g.screenshot = opt.screenshots == GenOptions::Screenshots::All || screen_is_sparse(g.observation.tree);
    }
    minutes += uniform(rng, 0, 2);
    g.history = history;
    const BuiltPrompt p = build_prompt(g.observation, history, opt.layout);
    g.sections = p.sections;
    g.record.body = chat_request(p, opt.request);
    g.record.episode = episode;
    g.record.step = step;
    g.record.app = app.name;
    g.record.task = task;
    if (expected) g.record.expected_action = to_json(*expected);
    out.push_back(std::move(g));
    return p;
  };

  // Single screens: one per app, in a seeded order, each with a task and 0-3 earlier actions.
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (int i = 0; i < opt.single_screens; ++i) {
    const App& app = all[order[static_cast<size_t>(i)]];
    const std::string task = app.tasks[static_cast<size_t>(uniform(rng, 0, static_cast<int>(app.tasks.size()) - 1))];
    std::vector<HistoryEntry> history;
    const int n_hist = uniform(rng, 0, 3);
    for (int k = 0; k < n_hist; ++k) history.push_back(random_past_action(app, rng));
    const json full = screen(app, rng, uniform(rng, 0, 2), opt.controls_scale);
    json tree = shots ? observe(full, chance(shot_rng, opt.sparse_rate)) : full;
    const std::vector<Control> controls = flatten_controls(tree);
    bool typed = n_hist > 0 && history.back().action.kind == ActionKind::Input;
    const HistoryEntry next = choose_action(controls, app, app.queries[0], std::min(n_hist, 3), 99, typed, rng);
    emit(app, task, std::move(tree), history, "", -1, next.action, full, "");
  }

  // Episodes: distinct apps, a task each, `steps` sequential screens.
  const std::vector<size_t> ep_apps = episode_apps(all.size(), rng);
  for (int e = 0; e < opt.episodes; ++e) {
    const App& app = all[ep_apps[static_cast<size_t>(e) % ep_apps.size()]];
    const auto [task, query, episode] = episode_task(app, e, rng);
    std::vector<HistoryEntry> history;
    bool typed = false;
    minutes += uniform(rng, 3, 30);  // between tasks the phone idles
    json full;
    bool sparse = false;
    std::string clock;
    for (int s = 0; s < opt.steps; ++s) {
      // With screenshots, a wait leaves the screen (and the status bar's clock) as it was, and so
      // does any other action now and then (the app still loading).
      const bool same = shots && s > 0 &&
                        (history.back().action.kind == ActionKind::Wait || chance(shot_rng, opt.unchanged_rate));
      if (!same) {
        full = screen(app, rng, std::min(s, 2), opt.controls_scale);
        if (shots) sparse = chance(shot_rng, opt.sparse_rate);
        clock.clear();
      }
      json tree = shots ? observe(full, sparse) : full;
      const std::vector<Control> controls = flatten_controls(tree);
      const HistoryEntry next = choose_action(controls, app, query, s, opt.steps - 1, typed, rng);
      emit(app, task, std::move(tree), history, episode, s + 1, next.action, full, clock);
      clock = out.back().clock;
      history.push_back(next);
    }
  }
  return out;
}

}  // namespace tandem::agent
