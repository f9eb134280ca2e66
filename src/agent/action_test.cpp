#include "agent/action.h"
#include "model/test_paths.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tandem::agent {
namespace {

TEST(ActionParser, AcceptsEveryAction) {
  struct Case {
    const char* text;
    ActionKind kind;
  };
  const Case cases[] = {
      {R"({"action": "tap", "index": 7})", ActionKind::Tap},
      {R"({"action":"click","index":0})", ActionKind::Tap},
      {R"({"action": "long_press", "index": 3})", ActionKind::LongPress},
      {R"({"action": "input", "index": 2, "text": "coffee"})", ActionKind::Input},
      {R"({"action": "input", "text": ""})", ActionKind::Input},
      {R"({"action": "scroll", "direction": "down", "index": 5})", ActionKind::Scroll},
      {R"({"action": "scroll", "direction": "up"})", ActionKind::Scroll},
      {R"({"action": "swipe", "direction": "left"})", ActionKind::Swipe},
      {R"({"action": "swipe", "from": [500, 1600], "to": [500, 400]})", ActionKind::Swipe},
      {R"({"action": "back"})", ActionKind::Back},
      {R"({"action": "home"})", ActionKind::Home},
      {R"({"action": "open_app", "app": "Settings"})", ActionKind::OpenApp},
      {R"({"action": "wait"})", ActionKind::Wait},
      {R"({"action": "wait", "seconds": 1.5})", ActionKind::Wait},
      {R"({"action": "finish", "status": "success", "message": "Alarm set"})", ActionKind::Finish},
      {R"({"action": "finish", "status": "infeasible"})", ActionKind::Finish},
      {"  \n{\"action\": \"back\"}\n ", ActionKind::Back},
      {"```json\n{\"action\": \"tap\", \"index\": 1}\n```", ActionKind::Tap},
      {"```\n{\"action\": \"home\"}\n```\n", ActionKind::Home},
  };
  for (const Case& c : cases) {
    const ParseResult r = parse_action(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error;
    EXPECT_EQ(r.action->kind, c.kind) << c.text;
    // The canonical text parses back to the same action.
    const ParseResult back = parse_action(to_text(*r.action));
    ASSERT_TRUE(back.ok()) << to_text(*r.action) << ": " << back.error;
    EXPECT_EQ(*back.action, *r.action);
  }
  const ParseResult t = parse_action(R"({"action": "input", "index": 2, "text": "咖啡 ☕"})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.action->text, "咖啡 ☕");
  EXPECT_EQ(t.action->index, 2);
  EXPECT_EQ(to_text(*parse_action(R"({"action":"click","index":4})").action), R"({"action":"tap","index":4})");
  const ParseResult s = parse_action(R"({"action": "swipe", "from": [1, 2], "to": [3, 4]})");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s.action->has_points);
  EXPECT_EQ(s.action->from[1], 2);
  EXPECT_EQ(s.action->to[0], 3);
}

TEST(ActionParser, RejectsMalformedOutputWithAClearError) {
  struct Case {
    std::string text;
    const char* expect;  // a substring of the error
  };
  const std::vector<Case> cases = {
      {"", "empty output"},
      {"   \n\t", "empty output"},
      {"tap 7", "expected a JSON object"},
      {"I will tap the search box: {\"action\": \"tap\", \"index\": 2}", "expected a JSON object"},
      {"[{\"action\": \"back\"}]", "expected a JSON object"},
      {"\"back\"", "expected a JSON object"},
      {"{\"action\": \"tap\", \"index\": 2", "not valid JSON"},
      {"{\"action\": \"tap\", \"index\": 2}}", "not valid JSON"},
      {"{\"action\": \"tap\", \"index\": 2} {\"action\": \"back\"}", "not valid JSON"},
      {"{\"action\": \"tap\", \"index\": 2}\nDone.", "not valid JSON"},
      {"{'action': 'back'}", "not valid JSON"},
      {"{\"action\": \"tap\", \"index\": 2,}", "not valid JSON"},
      {"{action: \"back\"}", "not valid JSON"},
      {"{\"action\": \"back\" /* go back */}", "not valid JSON"},
      {"{\"action\": \"inp\xff\"}", "not valid JSON"},
      {"{}", "missing \"action\""},
      {"{\"index\": 3}", "missing \"action\""},
      {"{\"action\": 3}", "\"action\" must be a string"},
      {"{\"action\": null}", "\"action\" must be a string"},
      {"{\"action\": [\"tap\"]}", "\"action\" must be a string"},
      {"{\"action\": \"TAP\", \"index\": 1}", "unknown action"},
      {"{\"action\": \"fly\"}", "unknown action"},
      {"{\"action\": \"\"}", "unknown action"},
      {"{\"action\": \"tap\"}", "needs \"index\""},
      {"{\"action\": \"long_press\"}", "needs \"index\""},
      {"{\"action\": \"tap\", \"index\": \"7\"}", "\"index\" must be an integer, got string"},
      {"{\"action\": \"tap\", \"index\": 7.5}", "\"index\" must be an integer, got number"},
      {"{\"action\": \"tap\", \"index\": 7.0}", "\"index\" must be an integer"},
      {"{\"action\": \"tap\", \"index\": true}", "\"index\" must be an integer, got boolean"},
      {"{\"action\": \"tap\", \"index\": -1}", "\"index\" must be >= 0"},
      {"{\"action\": \"tap\", \"index\": 99999999999999999999}", "\"index\" must be an integer"},
      {"{\"action\": \"tap\", \"index\": 18446744073709551615}", "out of range"},
      {"{\"action\": \"tap\", \"index\": 1, \"text\": \"x\"}", "unknown key \"text\" for \"tap\""},
      {"{\"action\": \"back\", \"index\": 1}", "unknown key \"index\" for \"back\""},
      {"{\"action\": \"tap\", \"index\": 1, \"index\": 2}", "duplicate key \"index\""},
      {"{\"action\": \"back\", \"action\": \"home\"}", "duplicate key \"action\""},
      {"{\"action\": \"input\", \"index\": 1}", "needs \"text\""},
      {"{\"action\": \"input\", \"text\": 5}", "\"text\" must be a string, got integer"},
      {"{\"action\": \"scroll\"}", "needs \"direction\""},
      {"{\"action\": \"scroll\", \"direction\": \"sideways\"}", "must be one of up, down, left, right"},
      {"{\"action\": \"scroll\", \"direction\": \"DOWN\"}", "must be one of up, down, left, right"},
      {"{\"action\": \"swipe\"}", "needs \"direction\", or both"},
      {"{\"action\": \"swipe\", \"from\": [1, 2]}", "needs \"direction\", or both"},
      {"{\"action\": \"swipe\", \"direction\": \"up\", \"from\": [1, 2], \"to\": [3, 4]}", "not both"},
      {"{\"action\": \"swipe\", \"from\": [1], \"to\": [3, 4]}", "[x, y]"},
      {"{\"action\": \"swipe\", \"from\": [1, -2], \"to\": [3, 4]}", ">= 0"},
      {"{\"action\": \"swipe\", \"from\": [1, 2.5], \"to\": [3, 4]}", "[x, y]"},
      {"{\"action\": \"open_app\"}", "needs \"app\""},
      {"{\"action\": \"open_app\", \"app\": \"  \"}", "must not be empty"},
      {"{\"action\": \"wait\", \"seconds\": 0}", "(0, 60]"},
      {"{\"action\": \"wait\", \"seconds\": 3600}", "(0, 60]"},
      {"{\"action\": \"wait\", \"seconds\": \"2\"}", "must be a number"},
      {"{\"action\": \"finish\"}", "needs \"status\""},
      {"{\"action\": \"finish\", \"status\": \"done\"}", "must be one of success, failure, infeasible"},
      {"{\"action\": \"finish\", \"status\": \"success\", \"message\": 1}", "\"message\" must be a string"},
      {"```json\n{\"action\": \"back\"}", "unterminated code fence"},
      {"```python\n{\"action\": \"back\"}\n```", "malformed code fence"},
      {"```json\n{\"action\": \"back\"}\n```\n```json\n{\"action\": \"home\"}\n```", "more than one code fence"},
      {std::string(100, '[') + std::string(100, ']'), "expected a JSON object"},
      {"{\"a\":" + std::string(100000, '[') , "output is"},
      {"{\"action\": \"back\", \"x\": " + std::string(50, '[') + std::string(50, ']') + "}", "nested too deeply"},
      {std::string("{\"action\": \"back\"}\0", 19), "NUL byte"},
  };
  for (const Case& c : cases) {
    ParseResult r;
    ASSERT_NO_THROW(r = parse_action(c.text)) << c.text;
    EXPECT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error.find(c.expect), std::string::npos) << "output: " << c.text.substr(0, 80) << "\nerror: " << r.error
                                                         << "\nexpected to contain: " << c.expect;
  }
}

TEST(ActionParser, ChecksIndicesAgainstTheScreen) {
  ParseOptions opt;
  opt.n_controls = 5;
  EXPECT_TRUE(parse_action(R"({"action": "tap", "index": 4})", opt).ok());
  const ParseResult r = parse_action(R"({"action": "tap", "index": 5})", opt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("not on the screen (controls 0..4)"), std::string::npos) << r.error;
  opt.allow_fence = false;
  EXPECT_FALSE(parse_action("```json\n{\"action\": \"back\"}\n```", opt).ok());
}

TEST(ActionParser, NeverThrowsOnRandomBytes) {
  uint64_t x = 88172645463325252ull;
  const std::string alphabet = "{}[]\":,0123456789-.eE actiondexp_tuwrfshmlgk\\\n\xff\xc3";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const size_t n = (x >> 7) % 48;
    for (size_t k = 0; k < n; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      s += alphabet[x % alphabet.size()];
    }
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    if (i % 3 == 0) s = "{\"action\": \"tap\", \"index\": " + s + "}";
    ParseResult r;
    ASSERT_NO_THROW(r = parse_action(s));
    EXPECT_TRUE(r.ok() || !r.error.empty());
  }
}

TEST(ActionParser, SchemaListsEveryAction) {
  const auto& s = action_schema();
  ASSERT_TRUE(s.contains("oneOf"));
  std::string all = s.dump();
  for (const char* name : {"tap", "long_press", "input", "scroll", "swipe", "back", "home", "open_app", "wait", "finish"})
    EXPECT_NE(all.find(std::string("\"const\":\"") + name + "\""), std::string::npos) << name;
}

// schemas/agent-action.schema.json is what replays and clients send as "response_format"; it is
// action_schema() pretty-printed, so the two cannot drift.
TEST(ActionParser, ShippedSchemaFileIsActionSchema) {
  const std::string path = std::string(TANDEM_SOURCE_DIR) + "/schemas/agent-action.schema.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), action_schema().dump(2) + "\n")
      << path << " differs from action_schema(); regenerate it with\n"
      << "  build/tandem-agent-prompt --schema > schemas/agent-action.schema.json";
}

TEST(ActionParser, ReadsALoneSurrogateEscapeAsReplacementCharacter) {
  // JSON's grammar (and so the schema's string rule) admits lone surrogate escapes; a pair stays a pair.
  const ParseResult lone = parse_action(R"({"action":"input","text":"a\ud800b\uDC00"})");
  ASSERT_TRUE(lone.ok()) << lone.error;
  EXPECT_EQ(lone.action->text, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  const ParseResult pair = parse_action(R"({"action":"finish","status":"success","message":"\ud83d\ude00 \u00e9"})");
  ASSERT_TRUE(pair.ok()) << pair.error;
  EXPECT_EQ(pair.action->text, "\xF0\x9F\x98\x80 \xC3\xA9");
  // Outside strings nothing is rewritten: the JSON error stays.
  EXPECT_FALSE(parse_action(R"({"action":"back"} \ud800)").ok());
  const ParseResult escaped = parse_action(R"({"action":"input","text":"\\ud800"})");  // a backslash, then "ud800"
  ASSERT_TRUE(escaped.ok()) << escaped.error;
  EXPECT_EQ(escaped.action->text, "\\ud800");
}

TEST(ActionDescribe, HistoryLines) {
  Action a;
  a.kind = ActionKind::Tap;
  a.index = 4;
  EXPECT_EQ(describe(a, "Search"), "tap [4] \"Search\"");
  a.kind = ActionKind::Input;
  a.index = 2;
  a.text = "coffee";
  EXPECT_EQ(describe(a), "input [2] text \"coffee\"");
  Action s;
  s.kind = ActionKind::Scroll;
  s.direction = Direction::Down;
  EXPECT_EQ(describe(s), "scroll down");
}

}  // namespace
}  // namespace tandem::agent
