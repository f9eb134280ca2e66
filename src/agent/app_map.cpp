#include "agent/app_map.h"

#include <stdexcept>

namespace tandem::agent {

namespace {

using Targets = std::vector<Target>;

Targets names(std::initializer_list<const char*> list) {
  Targets t;
  for (const char* n : list) t.push_back({n, ""});
  return t;
}

// The route prefix of a task that starts with the home screen's search field: tap it (paper) or
// type the target in it, which opens the search page; there, type the target if it is not typed
// yet and tap the "Search" button; then find it among the results.
std::vector<Stage> searched(const std::string& field, std::vector<Stage> rest) {
  std::vector<Stage> r = {{"{app}", StageOp::Search, field, std::string(kSearchTitle)},
                          {std::string(kSearchTitle), StageOp::Search, field, std::string(kSearchTitle)},
                          {std::string(kResultsTitle), StageOp::Find, "{target}", ""}};
  r.insert(r.end(), rest.begin(), rest.end());
  return r;
}
Stage tap(const std::string& screen, const std::string& label) { return {screen, StageOp::Tap, label, ""}; }
Stage find(const std::string& screen, const std::string& row = "{target}") { return {screen, StageOp::Find, row, ""}; }
Stage long_press(const std::string& screen) { return {screen, StageOp::LongPress, "{target}", ""}; }
Stage compose(const std::string& screen, const std::string& field, const std::string& send) {
  return {screen, StageOp::Compose, field, send};
}

// Pools shared by several apps.
const Targets& contacts() {
  static const Targets t = names({"Li Wei", "Wang Fang", "Zhang Min", "Liu Yang", "Chen Jie", "Zhao Lei", "Huang Ting",
                                  "Sun Hao", "Zhou Xin", "Mom", "Landlord", "Project Team", "Family", "Badminton Club",
                                  "Xu Ming", "Gao Yan"});
  return t;
}
const Targets& products_a() {
  static const Targets t = names({"USB-C Cable 1m", "Fast Charger 65W", "Wireless Earbuds", "Phone Case", "Power Bank 10000mAh",
                                  "Desk Lamp", "Water Bottle", "Backpack", "Running Shoes", "Notebook A5", "Sun Hat",
                                  "Yoga Mat"});
  return t;
}
const Targets& products_b() {
  static const Targets t = names({"Electric Kettle 1.5L", "Paper Towels 12 Rolls", "Instant Noodles x24", "Green Tea 500g",
                                  "Coffee Beans 1kg", "Rice Cooker", "Air Fryer", "Laundry Pods", "Toothpaste x3",
                                  "Mechanical Keyboard", "27-inch Monitor", "Bath Towel Set"});
  return t;
}
const Targets& songs() {
  static const Targets t = names({"Qing Tian", "Dao Xiang", "Rainy Day", "Sunny Day", "Hometown", "Ordinary Road",
                                  "Night Drive", "Blue Sky", "Little Lucky", "Lofi Study Mix", "Red Bean", "Nocturne"});
  return t;
}
const Targets& places() {
  static const Targets t = names({"Xidan Station", "Joy City Mall", "Chaoyang Park", "Sanlitun", "Guomao Station",
                                  "Wudaokou", "Peking Union Hospital", "Olympic Park", "Beijing Zoo", "Summer Palace",
                                  "Houhai Bar Street", "Temple of Heaven"});
  return t;
}

std::vector<AppMap> build() {
  std::vector<AppMap> a;
  // Chat: the home screen is the chat list.
  a.push_back({"WeChat", "com.tencent.mm", {"Chats", "Contacts", "Discover", "Me"}, {}, true,
               {{"Open the chat with {target} and send \"{text}\"", {find("{app}"), compose("{target}", "Message", "Send")}, "Message sent", 3},
                {"Delete my chat with {target} from the chat list",
                 {long_press("{app}"), tap("Chat options", "Delete chat"), tap("Delete this chat?", "Delete")}, "Chat deleted", 2},
},
               contacts(),
               {"I'll be ten minutes late", "See you at 7", "On my way", "Call me when you're free", "Happy birthday!",
                "The file is sent", "Dinner at 6?", "Thanks a lot"}});
  a.push_back({"Alipay", "com.eg.android.AlipayGphone", {"Home", "Wealth", "Messages", "Me"}, {"Scan", "Pay", "Transfer", "Top up"}, true,
               {{"Find this month's {target} and pay it in full", searched("Search", {tap("{target}", "Pay now"), tap("Confirm payment", "Pay")}), "Payment successful", 2},
                {"Transfer {text} yuan to my contact {target}",
                 {tap("{app}", "Transfer"), find("Transfer"), compose("{target}", "Amount", "Confirm")}, "Transfer sent", 2,
                 contacts(), {"20", "50", "88", "100", "200", "35"}}},
               names({"Electricity bill", "Water bill", "Gas bill", "Broadband bill", "Phone bill", "Property fee",
                      "Heating bill", "Parking fee"}),
               {}});
  a.push_back({"Taobao", "com.taobao.taobao", {"Home", "Videos", "Messages", "Cart", "Me"}, {}, true,
               {{"Search for {target} and add it to my shopping cart", searched("Search", {tap("{target}", "Add to cart")}), "Added to cart", 2},
                {"Search for {target}, buy it now and submit the order", searched("Search", {tap("{target}", "Buy now"), tap("Confirm order", "Submit order")}), "Order placed", 2},
                {"Remove {target} from my shopping cart", {tap("{app}", "Cart"), long_press("Cart"), tap("Item options", "Remove"), tap("Remove this item?", "Remove")},
                 "Removed from cart", 2}},
               products_a(), {}});
  a.push_back({"JD", "com.jingdong.app.mall", {"Home", "New", "Cart", "Me"}, {}, true,
               {{"Search for {target} and add it to my shopping cart", searched("Search", {tap("{target}", "Add to cart")}), "Added to cart", 1},
                {"Search for {target} and add it to my wishlist", searched("Search", {tap("{target}", "Wishlist")}), "Added to wishlist", 1},
                {"Search for {target}, buy it now and submit the order", searched("Search", {tap("{target}", "Buy now"), tap("Confirm order", "Submit order")}), "Order placed", 2},
                {"Remove {target} from my shopping cart", {tap("{app}", "Cart"), long_press("Cart"), tap("Item options", "Remove"), tap("Remove this item?", "Remove")},
                 "Removed from cart", 2}},
               products_b(), {}});
  a.push_back({"Meituan", "com.sankuai.meituan", {"Home", "Orders", "Messages", "Me"}, {}, true,
               {{"Order {target} for delivery to my home", searched("Search", {tap("{target}", "Add to order"), tap("Checkout", "Place order")}),
                 "Order placed", 1}},
               names({"Iced Latte", "Beef Noodles", "Hot Pot Set", "Fried Rice", "Milk Tea", "Dumplings x12", "Roast Duck",
                      "Caesar Salad", "Pork Buns", "Mango Smoothie"}),
               {}});
  a.push_back({"Dianping", "com.dianping.v1", {"Home", "Deals", "Messages", "Me"}, {}, true,
               {{"Search for {target} and save it to my favorites", searched("Search", {tap("{target}", "Save")}), "Saved to favorites", 1},
                {"Book a table for tonight at {target}", searched("Search", {tap("{target}", "Book a table"), tap("Booking", "Confirm")}),
                 "Table booked", 1}},
               names({"Haidilao Hot Pot", "Din Tai Fung", "Noodle House", "Green Tea Restaurant", "Xiao Long Kan", "Wagas",
                      "Yunnan Kitchen", "Peking Duck House", "Dumpling King", "Sichuan Garden"}),
               {}});
  a.push_back({"Amap", "com.autonavi.minimap", {"Home", "Nearby", "Messages", "Me"}, {}, true,
               {{"Start walking navigation from here to {target}", searched("Search", {tap("{target}", "Directions"), tap("Route", "Walk")}),
                 "Navigation started", 2},
                {"Save {target} as a favorite place", searched("Search", {tap("{target}", "Save")}), "Place saved", 1}},
               places(), {}});
  a.push_back({"DiDi", "com.sdu.didi.psnger", {"Ride", "Bike", "Trips", "Me"}, {}, true,
               {{"Call an express car from here to {target}", searched("Where to?", {tap("{target}", "Confirm Express")}), "Finding a driver", 2},
                {"Call a taxi from here to {target}", searched("Where to?", {tap("{target}", "Confirm Taxi")}), "Finding a taxi", 1}},
               names({"Beijing South Station", "Capital Airport T3", "Beijing West Station", "Daxing Airport", "Wangfujing",
                      "Zhongguancun", "Tsinghua University", "Lama Temple", "Beijing Railway Station", "Shougang Park"}),
               {}});
  a.push_back({"Douyin", "com.ss.android.ugc.aweme", {"Home", "Friends", "Inbox", "Me"}, {}, true,
               {{"Search for the video {target} and like it", searched("Search", {tap("{target}", "Like")}), "Liked", 1},
                {"Search for the video {target} and add it to favorites", searched("Search", {tap("{target}", "Favorite")}), "Added to favorites", 1}},
               names({"Mapo tofu in 5 minutes", "City walk in Chengdu", "Cat vs cucumber", "Street food tour", "Morning stretch",
                      "Phone camera tricks", "Dumpling folding", "Guitar in 30 days", "Tiny house tour", "Night market eats"}),
               {}});
  a.push_back({"Bilibili", "tv.danmaku.bili", {"Home", "Following", "Shop", "Me"}, {}, true,
               {{"Find the video {target} and add it to Watch Later", searched("Search", {tap("{target}", "Watch later")}), "Added to Watch Later", 1},
                {"Search for the video {target} and like it", searched("Search", {tap("{target}", "Like")}), "Liked", 1}},
               names({"Piano basics lesson 1", "Why the sky is blue", "Desk setup 2026", "Learn Rust in a week", "History of tea",
                      "Build a PC", "Origami crane", "Drawing hands", "Space news", "Retro games"}),
               {}});
  a.push_back({"Xiaohongshu", "com.xingin.xhs", {"Home", "Market", "Messages", "Me"}, {}, true,
               {{"Find the note {target} and save it to my collection", searched("Search", {tap("{target}", "Collect")}), "Collected", 1},
                {"Find the post {target} and comment \"{text}\" on it", searched("Search", {compose("{target}", "Add a comment", "Post")}),
                 "Comment posted", 2}},
               names({"Hiking near Hangzhou", "Cafe with a view", "Budget travel tips", "Desk plants guide", "Weekend brunch",
                      "Skincare routine", "Capsule wardrobe", "Sourdough at home", "Shanghai night walk", "Balcony garden"}),
               {"Love this!", "Great tips, thanks", "Where is this?", "Saved for later", "So pretty"}});
  a.push_back({"Weibo", "com.sina.weibo", {"Home", "Video", "Discover", "Messages", "Me"}, {}, true,
               {{"Find the post {target} and repost it", searched("Search", {tap("{target}", "Repost"), tap("Repost", "Send")}), "Reposted", 1},
                {"Find the post {target} and comment \"{text}\" on it", searched("Search", {compose("{target}", "Add a comment", "Post")}),
                 "Comment posted", 2}},
               names({"Good morning Beijing", "Top 10 trending topics", "Tomorrow's weather", "Mid-autumn plans",
                      "Olympic highlights", "New phone launch", "Traffic on Ring 3", "Best noodles in town",
                      "Movie night picks", "Marathon results"}),
               {"Agreed!", "Good morning", "Thanks for sharing", "See you there", "Nice one"}});
  a.push_back({"Zhihu", "com.zhihu.android", {"Home", "Hot", "Messages", "Me"}, {}, true,
               {{"Find the question {target} and upvote its top answer", searched("Search", {tap("{target}", "Upvote")}), "Upvoted", 1},
                {"Find the question {target} and follow it", searched("Search", {tap("{target}", "Follow")}), "Question followed", 1}},
               names({"How to learn Rust", "Is coffee healthy", "Best sleep schedule", "How to save money", "Why cats purr",
                      "Learning piano at 30", "Remote work tips", "How tides work", "Choosing a laptop", "Reading more books"}),
               {}});
  a.push_back({"Ctrip", "ctrip.android.view", {"Home", "Messages", "Trips", "Me"}, {}, true,
               {{"Book a room at {target} for tonight", searched("Search", {tap("{target}", "Book"), tap("Confirm booking", "Pay")}),
                 "Booking confirmed", 2},
                {"Search for {target} and save it to my favorites", searched("Search", {tap("{target}", "Save")}), "Saved to favorites", 1}},
               names({"Hanting Hotel Bund", "Atour Hotel Jing'an", "Ji Hotel Xujiahui", "Home Inn People's Sq", "Marriott Pudong",
                      "Hilton Hongqiao", "Orange Hotel Nanjing Rd", "Campanile Hotel", "Vienna Hotel Lujiazui", "Holiday Inn Expo"}),
               {}});
  a.push_back({"12306", "com.MobileTicket", {"Home", "Travel", "Orders", "Me"}, {}, true,
               {{"Book a second-class seat on train {target}", searched("Search", {tap("{target}", "Book"), tap("Confirm order", "Submit")}),
                 "Ticket booked", 1}},
               names({"G1234 Beijing-Tianjin", "G5 Beijing-Shanghai", "G101 Beijing-Nanjing", "C2001 Beijing-Tianjin",
                      "D301 Beijing-Harbin", "G79 Beijing-Shenzhen", "K21 Beijing-Guilin", "G651 Beijing-Xi'an"}),
               {}});
  a.push_back({"NetEase Music", "com.netease.cloudmusic", {"Discover", "Podcasts", "Library", "Me"}, {}, true,
               {{"Search for the song {target} and play it", searched("Search", {tap("{target}", "Play")}), "Now playing", 1},
                {"Search for the song {target} and add it to my favorites", searched("Search", {tap("{target}", "Favorite")}), "Added to favorites", 1},
                {"Remove the song {target} from my library", {tap("{app}", "Library"), long_press("Library"), tap("Song options", "Remove"), tap("Remove this song?", "Remove")},
                 "Removed from library", 1}},
               songs(), {}});
  a.push_back({"QQ Music", "com.tencent.qqmusic", {"Home", "Videos", "Library", "Me"}, {}, true,
               {{"Search for the song {target} and play it", searched("Search", {tap("{target}", "Play")}), "Now playing", 1},
                {"Search for the song {target} and download it", searched("Search", {tap("{target}", "Download")}), "Downloaded", 1},
                {"Remove the song {target} from my library", {tap("{app}", "Library"), long_press("Library"), tap("Song options", "Remove"), tap("Remove this song?", "Remove")},
                 "Removed from library", 1}},
               songs(), {}});
  a.push_back({"Baidu", "com.baidu.searchbox", {"Home", "Videos", "Tasks", "Me"}, {}, true,
               {{"Search for {target} and open the result", searched("Search", {}), "", 1},
                {"Search for {target} and save the article", searched("Search", {tap("{target}", "Save")}), "Article saved", 1}},
               names({"Beijing weather tomorrow", "USD to CNY rate", "Great Wall opening hours", "Mooncake recipe",
                      "Beijing subway map", "Flu symptoms", "Tang poems", "Typhoon news", "Gaokao dates", "Tea ceremony"}),
               {}});
  // Settings: a setting lives in a section (its group); its page has the switch "Use <setting>".
  a.push_back({"Settings", "com.android.settings", {}, {}, false,
               {{"Turn {state} {target} in Settings", {find("{app}", "{group}"), find("{group}"), {"{target}", StageOp::Toggle, "Use {target}", ""}},
                 "", 4}},
               {{"Wi-Fi", "Network & internet"}, {"Mobile data", "Network & internet"}, {"Airplane mode", "Network & internet"},
                {"Hotspot", "Network & internet"}, {"Wi-Fi calling", "Network & internet"}, {"Data saver", "Network & internet"},
                {"Bluetooth", "Connected devices"}, {"NFC", "Connected devices"}, {"Nearby Share", "Connected devices"},
                {"Dark mode", "Display"}, {"Adaptive brightness", "Display"}, {"Auto-rotate", "Display"},
                {"Night light", "Display"}, {"Do Not Disturb", "Sound & vibration"}, {"Vibrate for calls", "Sound & vibration"},
                {"Battery saver", "Battery"}, {"Battery percentage", "Battery"}, {"Location history", "Location"}},
               {}});
  a.push_back({"Clock", "com.android.deskclock", {"Alarm", "World clock", "Stopwatch", "Timer"}, {"Add alarm"}, false,
               {{"Set an alarm for {text} tomorrow morning", {tap("{app}", "Add alarm"), compose("New alarm", "Time", "Save")}, "Alarm saved", 2},
                {"Delete the alarm set for {target}", {long_press("{app}"), tap("Alarm options", "Delete alarm"), tap("Delete this alarm?", "Delete")}, "Alarm deleted", 2}},
               names({"06:00", "06:45", "07:30", "08:15", "09:00", "10:30", "12:00", "22:00", "05:40", "06:20"}),
               {"06:30", "07:00", "07:15", "07:45", "08:00", "05:50", "09:20", "06:10"}});
  a.push_back({"Calendar", "com.android.calendar", {"Day", "Week", "Month", "Schedule"}, {"New event"}, false,
               {{"Add an event called \"{text}\" to today's calendar", {tap("{app}", "New event"), compose("New event", "Title", "Save")},
                 "Event saved", 2},
                {"Delete the event {target} from my calendar", {long_press("{app}"), tap("Event options", "Delete event"), tap("Delete this event?", "Delete")}, "Event deleted", 2}},
               names({"Team standup", "Dentist visit", "Lunch with Wang Fang", "Gym session", "Project review",
                      "Flight to Chengdu", "Badminton", "Rent due", "Yoga class", "Parent meeting"}),
               {"Dentist", "Gym", "Call Mom", "Yoga class", "Project review", "Haircut", "Pay rent", "Book club"}});
  return a;
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

}  // namespace

const std::vector<AppMap>& app_maps() {
  static const std::vector<AppMap> a = build();
  return a;
}

const std::vector<Target>& targets_of(const AppMap& app, const TaskTemplate& t) {
  return t.targets.empty() ? app.targets : t.targets;
}
const std::vector<std::string>& texts_of(const AppMap& app, const TaskTemplate& t) {
  return t.texts.empty() ? app.texts : t.texts;
}

const AppMap* find_app_by_name(std::string_view name) {
  for (const AppMap& a : app_maps())
    if (a.name == name) return &a;
  return nullptr;
}

const AppMap* find_app_by_package(std::string_view package) {
  for (const AppMap& a : app_maps())
    if (a.package == package) return &a;
  return nullptr;
}

namespace {
std::string fill(const Task& t, std::string s) {
  s = replace_all(std::move(s), "{app}", t.app->name);
  s = replace_all(std::move(s), "{target}", t.target);
  s = replace_all(std::move(s), "{group}", t.group);
  s = replace_all(std::move(s), "{text}", t.text);
  s = replace_all(std::move(s), "{state}", t.on ? "on" : "off");
  return s;
}
}  // namespace

std::string Task::str() const { return fill(*this, tmpl->pattern); }
std::string Task::screen_of(const Stage& s) const { return fill(*this, s.screen); }
std::string Task::label_of(const Stage& s) const { return fill(*this, s.label); }
std::string Task::typed_at(const Stage& s) const {
  if (s.op == StageOp::Search) return target;
  if (s.op == StageOp::Compose) return text;
  return {};
}

bool parse_task(const AppMap& app, std::string_view text, Task& out) {
  // A template is literal text with slots; a slot's value runs to the next literal piece.
  for (const TaskTemplate& t : app.tasks) {
    Task r;
    r.app = &app;
    r.tmpl = &t;
    std::string_view pat = t.pattern, in = text;
    bool ok = true;
    while (ok && !pat.empty()) {
      if (pat[0] != '{') {
        const size_t lit = std::min(pat.find('{'), pat.size());
        ok = in.substr(0, lit) == pat.substr(0, lit);
        pat.remove_prefix(lit);
        if (ok) in.remove_prefix(lit);
        continue;
      }
      const size_t close = pat.find('}');
      const std::string_view slot = pat.substr(0, close + 1);
      pat.remove_prefix(close + 1);
      const std::string_view next = pat.substr(0, std::min(pat.find('{'), pat.size()));
      const size_t end = next.empty() ? in.size() : in.find(next);
      if (end == std::string_view::npos || end == 0) {
        ok = false;
        break;
      }
      const std::string value(in.substr(0, end));
      in.remove_prefix(end);
      if (slot == "{target}") r.target = value;
      else if (slot == "{text}") r.text = value;
      else if (slot == "{state}") {
        ok = value == "on" || value == "off";
        r.on = value == "on";
      } else ok = false;
    }
    if (!ok || !in.empty()) continue;
    if (t.pattern.find("{target}") != std::string::npos) {
      ok = false;
      for (const Target& x : targets_of(app, t))
        if (x.name == r.target) {
          r.group = x.group;
          ok = true;
        }
      if (!ok) continue;
    }
    out = std::move(r);
    return true;
  }
  return false;
}

}  // namespace tandem::agent
