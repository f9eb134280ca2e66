#include "agent/prompt_builder.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "agent/episode_gen.h"
#include "agent/trace.h"

namespace tandem::agent {
namespace {

using json = nlohmann::json;

json sample_tree() {
  return json::parse(R"({"class": "android.widget.FrameLayout", "children": [
    {"class": "android.widget.ImageButton", "content_desc": "Back", "clickable": true},
    {"class": "android.widget.TextView", "text": "Alarms"},
    {"class": "android.widget.EditText", "text": "Search", "resource_id": "com.x:id/search", "clickable": true, "editable": true, "focused": true},
    {"class": "androidx.recyclerview.widget.RecyclerView", "resource_id": "com.x:id/list", "scrollable": true, "children": [
      {"class": "android.widget.LinearLayout", "clickable": true, "children": [
        {"class": "android.widget.TextView", "text": "07:00"}, {"class": "android.widget.TextView", "text": "Tomorrow"}]},
      {"class": "android.widget.LinearLayout", "clickable": true, "children": [
        {"class": "android.widget.TextView", "text": "08:30"},
        {"class": "android.widget.Switch", "checkable": true, "checked": true, "clickable": true}]}
    ]},
    {"class": "android.view.View"}
  ]})");
}

std::vector<HistoryEntry> actions(int n) {
  std::vector<HistoryEntry> h;
  for (int i = 0; i < n; ++i) {
    HistoryEntry e;
    e.action.kind = ActionKind::Tap;
    e.action.index = i;
    e.label = "step" + std::to_string(i + 1);
    h.push_back(e);
  }
  return h;
}

TEST(PromptBuilder, FlattensTheAccessibilityTree) {
  const auto c = flatten_controls(sample_tree());
  ASSERT_EQ(c.size(), 8u);
  EXPECT_EQ(control_line(c[0]), "[0] ImageButton \"Back\" clickable");
  EXPECT_EQ(control_line(c[1]), "[1] TextView \"Alarms\"");
  EXPECT_EQ(control_line(c[2]), "[2] EditText \"Search\" clickable editable focused");
  EXPECT_EQ(control_line(c[3]), "[3] RecyclerView id=list scrollable");
  // A row of passive texts is one control; a row with a switch keeps its children.
  EXPECT_EQ(control_line(c[4]), "[4] LinearLayout \"07:00 | Tomorrow\" clickable");
  EXPECT_EQ(control_line(c[5]), "[5] LinearLayout clickable");
  EXPECT_EQ(control_line(c[6]), "[6] TextView \"08:30\"");
  EXPECT_EQ(control_line(c[7]), "[7] Switch clickable checked");
  EXPECT_THROW(flatten_controls(json::parse(R"({"children": 3})")), std::invalid_argument);
  EXPECT_THROW(flatten_controls(json::parse(R"({"text": 3})")), std::invalid_argument);
  EXPECT_THROW(flatten_controls(json::parse(R"([1, 2])")), std::invalid_argument);
  json deep = json::object();
  for (int i = 0; i < 100; ++i) deep = json{{"children", json::array({deep})}};
  EXPECT_THROW(flatten_controls(deep), std::invalid_argument);
}

TEST(PromptBuilder, DefaultLayout) {
  Observation obs{.app = "Clock", .task = "Set an alarm for 7:00", .tree = sample_tree(), .date = "", .image = ""};
  const BuiltPrompt p = build_prompt(obs, actions(5));
  const std::string& t = p.text;
  ASSERT_EQ(t.rfind(rules_text(), 0), 0u);  // rules first
  const size_t task = t.find("Task: Set an alarm for 7:00\nApp: Clock\nRecent actions (oldest first):\n");
  ASSERT_NE(task, std::string::npos);
  EXPECT_NE(t.find("Guidelines:"), std::string::npos);
  EXPECT_LT(t.find("Guidelines:"), task);
  // The window holds the last three actions, numbered by their step.
  EXPECT_EQ(t.find("1. tap [0]"), std::string::npos);
  EXPECT_EQ(t.find("2. tap [1]"), std::string::npos);
  EXPECT_NE(t.find("3. tap [2] \"step3\"\n4. tap [3] \"step4\"\n5. tap [4] \"step5\"\n"), std::string::npos);
  EXPECT_GT(t.find("Screen controls:\n[0] ImageButton \"Back\" clickable\n"), task);
  // Sections are in order, contiguous and cover the text.
  ASSERT_EQ(p.sections.size(), 3u);
  EXPECT_EQ(p.sections[0].name, "rules");
  EXPECT_EQ(p.sections[1].name, "task_history");
  EXPECT_EQ(p.sections[2].name, "controls");
  EXPECT_EQ(p.sections[0].begin, 0u);
  for (size_t i = 1; i < p.sections.size(); ++i) EXPECT_EQ(p.sections[i].begin, p.sections[i - 1].end);
  EXPECT_EQ(p.sections.back().end, t.size());
  // First step: no history.
  EXPECT_NE(build_prompt(obs, {}).text.find("Recent actions (oldest first):\n(none)\n"), std::string::npos);
  // The request body: one user message, greedy.
  const auto body = chat_request(p);
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], t);
  EXPECT_EQ(body["temperature"], 0.0);
}

TEST(PromptBuilder, OtherLayouts) {
  Observation obs{.app = "Clock", .task = "T", .tree = sample_tree(), .date = "2026-08-14 09:30", .image = ""};
  PromptLayout mem;
  mem.growing_memory = true;
  const std::string m = build_prompt(obs, actions(5), mem).text;
  EXPECT_NE(m.find("Memory (all actions so far):\n1. tap [0] \"step1\"\n"), std::string::npos);
  EXPECT_NE(m.find("5. tap [4]"), std::string::npos);
  PromptLayout before = mem;
  before.memory_before_task = true;
  const std::string b = build_prompt(obs, actions(2), before).text;
  EXPECT_LT(b.find("Memory"), b.find("Task: T"));
  PromptLayout after;
  after.guidelines_after_screen = true;
  const BuiltPrompt a = build_prompt(obs, actions(1), after);
  EXPECT_GT(a.text.find("Guidelines:"), a.text.find("Screen controls:"));
  EXPECT_EQ(a.sections.back().name, "guidelines");
  PromptLayout date;
  date.date_first = true;
  const BuiltPrompt d = build_prompt(obs, {}, date);
  EXPECT_EQ(d.text.rfind("Date: 2026-08-14 09:30\n", 0), 0u);
  EXPECT_EQ(d.sections.front().name, "date");
  PromptLayout window1;
  window1.history_window = 1;
  const std::string w = build_prompt(obs, actions(3), window1).text;
  EXPECT_EQ(w.find("2. tap"), std::string::npos);
  EXPECT_NE(w.find("3. tap [2]"), std::string::npos);
}

TEST(Trace, RoundTripAndErrors) {
  TraceRecord r;
  r.body = nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8})");
  r.episode = "e1";
  r.step = 2;
  r.app = "Clock";
  r.expected_action = nlohmann::ordered_json::parse(R"({"action": "back"})");
  r.image = "a.png";
  std::stringstream ss;
  write_trace(ss, {r, r});
  std::stringstream in("# comment\n\n" + ss.str());
  const auto back = read_trace(in);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].body, r.body);  // trace fields are not part of the body
  EXPECT_EQ(back[0].episode, "e1");
  EXPECT_EQ(back[0].step, 2);
  EXPECT_EQ(back[0].app, "Clock");
  EXPECT_EQ(back[0].image, "a.png");
  EXPECT_EQ((*back[0].expected_action)["action"], "back");
  EXPECT_EQ(back[1].line, 4);
  auto fails = [](const std::string& text, const char* what) {
    std::stringstream s(text);
    try {
      read_trace(s, "t.jsonl");
      ADD_FAILURE() << "no error for " << text;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails("{\"messages\": []}\n", "t.jsonl:1: the request body needs a non-empty \"messages\" array");
  fails("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n{bad\n", "t.jsonl:2: not valid JSON");
  fails("[1]\n", "must be a JSON object");
  fails("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"step\": -1}\n", "\"step\"");
  fails("\n# only a comment\n", "no requests");
}

TEST(EpisodeGenerator, PaperStructureSeededAndParsable) {
  const auto a = generate_trace({});
  ASSERT_EQ(a.size(), 61u);
  int singles = 0;
  for (int i = 0; i < 21; ++i) singles += a[static_cast<size_t>(i)].record.episode.empty();
  EXPECT_EQ(singles, 21);
  std::set<std::string> apps;
  for (int i = 0; i < 21; ++i) apps.insert(a[static_cast<size_t>(i)].record.app);
  EXPECT_EQ(apps.size(), 21u);
  for (int e = 0; e < 5; ++e)
    for (int s = 0; s < 8; ++s) {
      const auto& r = a[static_cast<size_t>(21 + e * 8 + s)].record;
      EXPECT_EQ(r.episode, "e" + std::to_string(e + 1));
      EXPECT_EQ(r.step, s + 1);
    }
  // Every expected action is valid on its own screen; the last step of an episode finishes.
  for (const auto& g : a) {
    ASSERT_TRUE(g.record.expected_action);
    ParseOptions opt;
    opt.n_controls = static_cast<int64_t>(flatten_controls(g.observation.tree).size());
    const ParseResult p = parse_action(g.record.expected_action->dump(), opt);
    EXPECT_TRUE(p.ok()) << p.error;
  }
  EXPECT_EQ((*a.back().record.expected_action)["action"], "finish");
  // Within an episode, step k's history is the expected actions of steps 1..k-1.
  const auto& s3 = a[21 + 2];
  ASSERT_EQ(s3.history.size(), 2u);
  EXPECT_EQ(to_json(s3.history[1].action), *a[21 + 1].record.expected_action);
  // Seeded: same seed, same trace; another seed, another trace.
  const auto b = generate_trace({});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].record.to_line(), b[i].record.to_line());
  GenOptions o;
  o.seed = 2;
  EXPECT_NE(generate_trace(o)[0].record.to_line(), a[0].record.to_line());
  // Knobs.
  o.single_screens = 0;
  o.episodes = 2;
  o.steps = 3;
  o.layout.growing_memory = true;
  o.layout.date_first = true;
  const auto c = generate_trace(o);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].record.body["messages"][0]["content"].get<std::string>().rfind("Date: ", 0), 0u);
  o.single_screens = 22;
  EXPECT_THROW(generate_trace(o), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::agent
