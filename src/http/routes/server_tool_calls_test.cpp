// Tool calls over HTTP (issue 45): out of chat answers (text/tool_calls.h) — a request with tools
// answers alike whole and streamed, tool_choice "none" leaves a call the model wrote as text;
// constrained (grammar/tool_grammar.h) — tool_choice "required" or a named function makes the
// tiny random model's every answer a valid call, with forced drafts under speculation and the
// same answers without it, "auto" never returns a broken call as a call; tool results in
// (assistant tool_calls, tool messages); bad tools, tool_choice and tool_call_id are 400s that
// name the field while the server keeps serving. (The parsing itself, call by call, is
// text/chat_answer_test.cpp's; the grammar's, grammar/tool_grammar_test.cpp's; the shapes of
// message.tool_calls and its stream chunks are http/api/response_json_test.cpp's.)
#include <gtest/gtest.h>

#include "http/routes/http_test_util.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

const char* kTapCall = "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n</function>\n</tool_call>";

Json tap_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "tap", "description": "Tap an element",
    "parameters": {"type": "object", "properties": {"index": {"type": "integer"}}, "required": ["index"]}}}])");
}

Json tool_request(int max_tokens) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "Open the menu."}}})},
              {"tools", tap_tools()},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"chat_template_kwargs", Json{{"enable_thinking", false}}}};
}

// The streamed answer's content, tool-call names (in index order) and finish reason.
struct StreamedCalls {
  std::string content;
  std::vector<std::string> names;
  std::string finish_reason;
};

StreamedCalls stream_calls(TestServer& s, const Json& body) {
  StreamedCalls out;
  for (const Json& ch : streamed_choices(s, body)) {
    if (ch["delta"].contains("content")) out.content += ch["delta"]["content"].get<std::string>();
    if (ch["delta"].contains("tool_calls"))
      for (const Json& c : ch["delta"]["tool_calls"])
        if (c["function"].contains("name")) out.names.push_back(c["function"]["name"]);
    if (!ch["finish_reason"].is_null()) out.finish_reason = ch["finish_reason"];
  }
  return out;
}

class HttpToolCalls : public ::testing::Test {
 protected:
  // Qwen3.5's template: tools rendered, calls written in its XML format.
  const text::ChatTemplate qwen35_{text::ChatTemplateFamily::Qwen35};
  TestServer server_{*TinyModel::get().model, *TinyModel::get().tok, qwen35_, small_engine(1, 8, 4096)};
};

// Whatever the model writes, the whole answer and the streamed one return the same content, calls
// and finish reason.
TEST_F(HttpToolCalls, WholeAndStreamedAnswersAgree) {
  for (int max_tokens : {4, 24}) {
    const Json body = tool_request(max_tokens);
    const Json whole = parse_body(post_json(server_, "/v1/chat/completions", body));
    const Json& choice = whole["choices"][0];
    const StreamedCalls st = stream_calls(server_, body);
    std::vector<std::string> names;
    for (const Json& c : choice["message"].value("tool_calls", Json::array())) names.push_back(c["function"]["name"]);
    EXPECT_EQ(st.names, names);
    EXPECT_EQ(st.content, choice["message"]["content"].is_null() ? "" : choice["message"]["content"].get<std::string>());
    EXPECT_EQ(st.finish_reason, choice["finish_reason"]);
    EXPECT_EQ(choice["finish_reason"] == "tool_calls", !names.empty()) << whole;
  }
}

// tool_choice "none": the model may not call, so a call it writes anyway stays text. (llama.cpp
// refuses a grammar with tools unless tool_choice is "none"; the grammar writes the call.)
TEST_F(HttpToolCalls, ToolChoiceNoneLeavesACallAsText) {
  Json body = tool_request(256);
  body["tool_choice"] = "none";
  body["grammar"] = "root ::= " + Json(kTapCall).dump();
  const Json whole = parse_body(post_json(server_, "/v1/chat/completions", body));
  EXPECT_EQ(whole["choices"][0]["message"]["content"], kTapCall) << whole;
  EXPECT_FALSE(whole["choices"][0]["message"].contains("tool_calls")) << whole;
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  const StreamedCalls st = stream_calls(server_, body);
  EXPECT_EQ(st.content, kTapCall);
  EXPECT_TRUE(st.names.empty());
  EXPECT_EQ(st.finish_reason, "stop");
}

TEST_F(HttpToolCalls, BadToolChoiceIsA400NamingTheField) {
  for (const Json& bad : {Json("always"), Json(1), Json::array()}) {
    Json body = tool_request(4);
    body["tool_choice"] = bad;
    auto r = post_json(server_, "/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(Json::parse(r->body)["error"]["param"], "tool_choice") << r->body;
  }
  for (const Json& ok : {Json("auto"), Json("required"), Json::parse(R"({"type": "function", "function": {"name": "tap"}})")}) {
    Json body = tool_request(2);
    body["tool_choice"] = ok;
    auto r = post_json(server_, "/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
}

// Two tools whose arguments are bounded (an integer range, an enum), so that a random model's
// constrained call always ends.
Json bounded_tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "tap", "description": "Tap an element",
      "parameters": {"type": "object", "properties": {"index": {"type": "integer", "minimum": 0, "maximum": 99},
                                                      "long_press": {"type": "boolean"}},
                     "required": ["index"]}}},
    {"type": "function", "function": {"name": "scroll",
      "parameters": {"type": "object", "properties": {"direction": {"type": "string", "enum": ["up", "down"]}},
                     "required": ["direction"]}}}])");
}

// The call's arguments fit bounded_tools()' schemas.
void expect_valid_call(const Json& call, const std::string& context) {
  ASSERT_EQ(call["type"], "function") << context;
  const std::string name = call["function"]["name"];
  Json args;
  ASSERT_NO_THROW(args = Json::parse(call["function"]["arguments"].get<std::string>())) << context;
  ASSERT_TRUE(args.is_object()) << context;
  if (name == "tap") {
    ASSERT_TRUE(args.contains("index") && args["index"].is_number_integer()) << context;
    EXPECT_TRUE(args["index"].get<int64_t>() >= 0 && args["index"].get<int64_t>() <= 99) << context;
    if (args.contains("long_press")) EXPECT_TRUE(args["long_press"].is_boolean()) << context;
    EXPECT_LE(args.size(), 2u) << context;
  } else {
    ASSERT_EQ(name, "scroll") << context;
    EXPECT_TRUE(args["direction"] == "up" || args["direction"] == "down") << context;
    EXPECT_EQ(args.size(), 1u) << context;
  }
}

Json required_request(uint64_t seed) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "Open the menu."}}})},
              {"tools", bounded_tools()},
              {"tool_choice", "required"},
              {"parallel_tool_calls", false},
              {"max_tokens", 256},
              {"temperature", 1.0},
              {"seed", seed},
              {"chat_template_kwargs", Json{{"enable_thinking", false}}}};
}

// tool_choice "required" on the tiny random model, in each call format (Qwen3.5's XML; Qwen3's and
// Granite's JSON; LFM2's Pythonic calls): 100 of 100 answers (20 of 20) are
// valid calls, the tags and names came as forced drafts (accepted: the grammar forced them), and
// a server without speculation gives the very same answers.
TEST(HttpToolChoice, RequiredGivesValidCallsWithForcedDrafts) {
  TinyModel& m = TinyModel::get();
  for (const auto family : {text::ChatTemplateFamily::Qwen35, text::ChatTemplateFamily::Qwen3, text::ChatTemplateFamily::Granite4,
                            text::ChatTemplateFamily::LFM2}) {
    const text::ChatTemplate tmpl(family);
    serve::EngineConfig spec = small_engine(1, 8, 4096);
    spec.speculation.enabled = true;
    TestServer on(*m.model, *m.tok, tmpl, spec);
    TestServer off(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
    const int n = family == text::ChatTemplateFamily::Qwen35 ? 100 : 20;
    int valid = 0;
    int64_t forced_accepted = 0;
    for (int i = 0; i < n; ++i) {
      const Json body = required_request(static_cast<uint64_t>(i));
      const Json whole = parse_body(post_json(on, "/v1/chat/completions", body));
      const std::string context = std::string(text::chat_template_family_name(family)) + " seed " + std::to_string(i) + ": " + whole.dump();
      const Json& choice = whole["choices"][0];
      ASSERT_EQ(choice["finish_reason"], "tool_calls") << context;
      ASSERT_TRUE(choice["message"]["content"].is_null()) << context;
      ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << context;
      expect_valid_call(choice["message"]["tool_calls"][0], context);
      ++valid;
      forced_accepted += whole["timings"]["drafts_forced_accepted"].get<int64_t>();
      EXPECT_GT(whole["timings"]["drafts_forced_accepted"].get<int64_t>(), 0) << context;
      if (i < 10) {  // speculation off: the same call (ids aside)
        const Json plain = parse_body(post_json(off, "/v1/chat/completions", body));
        EXPECT_EQ(plain["choices"][0]["message"]["tool_calls"][0]["function"], choice["message"]["tool_calls"][0]["function"])
            << context;
        EXPECT_EQ(plain["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]) << context;
      }
    }
    EXPECT_EQ(valid, n);
    EXPECT_GT(forced_accepted, 0);
  }
}

// A named function: only that one is called; streamed, the same call arrives in OpenAI's deltas.
TEST(HttpToolChoice, NamedFunctionWholeAndStreamed) {
  TinyModel& m = TinyModel::get();
  const text::ChatTemplate tmpl(text::ChatTemplateFamily::Qwen35);
  TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
  for (int seed = 0; seed < 5; ++seed) {
    Json body = required_request(static_cast<uint64_t>(seed));
    body["tool_choice"] = Json::parse(R"({"type": "function", "function": {"name": "scroll"}})");
    const Json whole = parse_body(post_json(s, "/v1/chat/completions", body));
    const Json& calls = whole["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << whole;
    EXPECT_EQ(calls[0]["function"]["name"], "scroll") << whole;
    expect_valid_call(calls[0], whole.dump());
    std::string name, args;
    for (const Json& ch : streamed_choices(s, body))
      if (ch["delta"].contains("tool_calls"))
        for (const Json& c : ch["delta"]["tool_calls"]) {
          if (c["function"].contains("name")) name += c["function"]["name"].get<std::string>();
          if (c["function"].contains("arguments")) args += c["function"]["arguments"].get<std::string>();
        }
    EXPECT_EQ(name, "scroll");
    EXPECT_EQ(args, calls[0]["function"]["arguments"]);
  }
}

// "auto": the model writes text or calls; whatever it writes, a call that comes back is valid,
// and a call cut short by max_tokens comes back as text (finish_reason "length"), never a 500.
TEST(HttpToolChoice, AutoNeverReturnsABrokenCall) {
  TinyModel& m = TinyModel::get();
  const text::ChatTemplate tmpl(text::ChatTemplateFamily::Qwen35);
  TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
  for (int seed = 0; seed < 40; ++seed) {
    Json body = required_request(static_cast<uint64_t>(seed));
    body["tool_choice"] = "auto";
    body["max_tokens"] = 48;
    const auto r = post_json(s, "/v1/chat/completions", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Json whole = Json::parse(r->body);
    const Json& choice = whole["choices"][0];
    for (const Json& c : choice["message"].value("tool_calls", Json::array())) expect_valid_call(c, whole.dump());
    EXPECT_EQ(choice["finish_reason"] == "tool_calls", choice["message"].contains("tool_calls")) << whole;
  }
  for (int max_tokens : {3, 8, 12}) {  // a required call cut short: text
    Json body = required_request(1);
    body["max_tokens"] = max_tokens;
    const Json whole = parse_body(post_json(s, "/v1/chat/completions", body));
    const Json& choice = whole["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "length") << whole;
    EXPECT_FALSE(choice["message"].contains("tool_calls")) << whole;
    const std::string content = choice["message"]["content"];
    EXPECT_TRUE(content.starts_with("<tool_call>\n<function=") || std::string("<tool_call>\n<function=").starts_with(content))
        << whole;
  }
}

// tool_choice "none": the tools are not rendered (fewer prompt tokens than "auto").
TEST(HttpToolChoice, NoneRendersNoTools) {
  TinyModel& m = TinyModel::get();
  const text::ChatTemplate tmpl(text::ChatTemplateFamily::Qwen35);
  TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
  Json body = required_request(0);
  body["max_tokens"] = 1;
  body["tool_choice"] = "auto";
  const Json with = parse_body(post_json(s, "/v1/chat/completions", body));
  body["tool_choice"] = "none";
  const Json without = parse_body(post_json(s, "/v1/chat/completions", body));
  body.erase("tools");
  body.erase("tool_choice");
  const Json no_tools = parse_body(post_json(s, "/v1/chat/completions", body));
  EXPECT_GT(with["usage"]["prompt_tokens"].get<int64_t>(), without["usage"]["prompt_tokens"].get<int64_t>());
  EXPECT_EQ(without["usage"]["prompt_tokens"], no_tools["usage"]["prompt_tokens"]);
}

// A conversation with a call and its result: arguments as OpenAI sends them (a JSON string) or as
// an object render the same prompt in every family that parses calls; the answer may call again.
TEST(HttpToolChoice, ToolResultRoundTrip) {
  TinyModel& m = TinyModel::get();
  for (const auto family : {text::ChatTemplateFamily::Qwen35, text::ChatTemplateFamily::Qwen3, text::ChatTemplateFamily::Granite4,
                            text::ChatTemplateFamily::LFM2}) {
    const text::ChatTemplate tmpl(family);
    TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
    auto conversation = [](const Json& arguments) {
      return Json{{"messages", Json::array({
                       Json{{"role", "user"}, {"content", "Open the menu."}},
                       Json{{"role", "assistant"}, {"content", nullptr},
                            {"tool_calls", Json::array({Json{{"id", "call_1"}, {"type", "function"},
                                                             {"function", Json{{"name", "tap"}, {"arguments", arguments}}}}})}},
                       Json{{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "{\"ok\": true}"}}})},
                  {"tools", bounded_tools()},
                  {"max_tokens", 8},
                  {"temperature", 0}};
    };
    const Json as_string = parse_body(post_json(s, "/v1/chat/completions", conversation("{\"index\": 3}")));
    const Json as_object = parse_body(post_json(s, "/v1/chat/completions", conversation(Json{{"index", 3}})));
    EXPECT_EQ(as_string["usage"]["prompt_tokens"], as_object["usage"]["prompt_tokens"]) << chat_template_family_name(family);
    EXPECT_EQ(as_string["choices"][0]["message"], as_object["choices"][0]["message"]) << chat_template_family_name(family);
  }
}

// LFM2's Pythonic calls, written under tool_choice "required" with parallel calls allowed: parsed
// alike whole and streamed (names, then arguments); a call cut short by max_tokens stays text.
TEST(HttpToolChoice, Lfm2PythonicCallsWholeAndStreamed) {
  TinyModel& m = TinyModel::get();
  const text::ChatTemplate tmpl(text::ChatTemplateFamily::LFM2);
  TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
  for (int seed = 0; seed < 5; ++seed) {
    Json body = required_request(static_cast<uint64_t>(seed));
    body["parallel_tool_calls"] = true;
    const Json whole = parse_body(post_json(s, "/v1/chat/completions", body));
    const Json& choice = whole["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "tool_calls") << whole;
    const Json& calls = choice["message"]["tool_calls"];
    ASSERT_GE(calls.size(), 1u) << whole;
    std::vector<std::string> names;
    std::string args;
    for (const Json& c : calls) {
      expect_valid_call(c, whole.dump());
      names.push_back(c["function"]["name"]);
      args += c["function"]["arguments"].get<std::string>();
    }
    std::vector<std::string> st_names;
    std::string st_args;
    for (const Json& ch : streamed_choices(s, body))
      if (ch["delta"].contains("tool_calls"))
        for (const Json& c : ch["delta"]["tool_calls"]) {
          if (c["function"].contains("name")) st_names.push_back(c["function"]["name"]);
          if (c["function"].contains("arguments")) st_args += c["function"]["arguments"].get<std::string>();
        }
    EXPECT_EQ(st_names, names) << whole;
    EXPECT_EQ(st_args, args) << whole;
  }
  Json body = required_request(1);
  body["max_tokens"] = 6;
  const Json cut = parse_body(post_json(s, "/v1/chat/completions", body));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "length") << cut;
  EXPECT_FALSE(cut["choices"][0]["message"].contains("tool_calls")) << cut;
  const std::string content = cut["choices"][0]["message"]["content"];
  EXPECT_TRUE(content.starts_with("<|tool_call_start|>[") || std::string("<|tool_call_start|>[").starts_with(content)) << cut;
}

void expect_400_naming(TestServer& s, const Json& body, const std::string& param, const std::string& fragment) {
  const auto r = post_json(s, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 400) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_EQ(j["error"]["param"], param) << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r->body;
}

// Bad tools, tool_choice and tool_call_id: a 400 that says which, and the server keeps serving.
TEST(HttpToolChoice, BadInputIsA400ThatSaysWhich) {
  TinyModel& m = TinyModel::get();
  const text::ChatTemplate tmpl(text::ChatTemplateFamily::Qwen35);
  TestServer s(*m.model, *m.tok, tmpl, small_engine(1, 8, 4096));
  Json body = required_request(0);
  body["max_tokens"] = 4;

  Json b = body;
  b["tools"][1]["function"].erase("name");
  expect_400_naming(s, b, "tools", "tools[1].function.name");
  b = body;
  b["tools"][0]["function"]["parameters"] = Json::parse(R"({"type": "string"})");
  expect_400_naming(s, b, "tools", "tools[0].function.parameters.type");
  b = body;
  b["tools"][0]["function"]["parameters"] = "index: int";
  expect_400_naming(s, b, "tools", "tools[0].function.parameters");
  b = body;
  b["tools"][0]["function"]["parameters"]["properties"]["index"]["type"] = "hiccup";
  expect_400_naming(s, b, "tools", "tools[0].function.parameters/properties/index");
  b = body;
  b["tools"][1]["function"]["name"] = "tap";
  expect_400_naming(s, b, "tools", "tools[1].function.name");
  b = body;
  b["tool_choice"] = Json::parse(R"({"type": "function", "function": {"name": "swipe"}})");
  expect_400_naming(s, b, "tool_choice", "'swipe' is not a function in 'tools' (tap, scroll)");
  b = body;
  b["tool_choice"] = "sometimes";
  expect_400_naming(s, b, "tool_choice", "\"sometimes\"");
  b = body;
  b.erase("tools");
  expect_400_naming(s, b, "tool_choice", "needs 'tools'");
  b = body;
  b["response_format"] = Json{{"type", "json_object"}};
  expect_400_naming(s, b, "tool_choice", "response_format");
  b = body;
  b["messages"].push_back(Json{{"role", "assistant"}, {"content", nullptr},
                               {"tool_calls", Json::array({Json{{"id", "call_a"}, {"type", "function"},
                                                                {"function", Json{{"name", "tap"}, {"arguments", "{}"}}}}})}});
  b["messages"].push_back(Json{{"role", "tool"}, {"tool_call_id", "call_b"}, {"content", "done"}});
  expect_400_naming(s, b, "messages", "messages[2].tool_call_id");

  // A template without a call format cannot be required to call.
  const text::ChatTemplate chatml_tmpl(text::ChatTemplateFamily::ChatML);
  TestServer chatml(*m.model, *m.tok, chatml_tmpl, small_engine(1, 8, 4096));
  expect_400_naming(chatml, body, "tool_choice", "chatml");

  const auto ok = post_json(s, "/v1/chat/completions", body);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace tandem::http
