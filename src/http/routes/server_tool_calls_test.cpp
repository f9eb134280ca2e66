// Tool calls out of chat answers over HTTP (issue 45, text/tool_calls.h): a request with tools
// answers alike whole and streamed, tool_choice "none" leaves a call the model wrote as text, a
// bad tool_choice is a 400. (The parsing itself, call by call, is text/chat_answer_test.cpp's; the
// shapes of message.tool_calls and its stream chunks are http/api/response_json_test.cpp's. The
// tiny model's answers are random, and a grammar that would force a call cannot go with tools.)
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
  TestServer server_{*TinyModel::get().model, *TinyModel::get().tok, qwen35_, small_engine()};
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

}  // namespace
}  // namespace tandem::http
