// Constrained answers over HTTP (http/api/grammar_request.h, spec/constrained.md §3): /completion's
// `grammar` and `json_schema`, chat's `response_format` (json_object, json_schema), streamed and
// whole; the 400s a bad grammar, schema or shape gets (before any SSE bytes when streaming);
// schema warnings in the response; forced and MTP drafts in the timings; /metrics.
#include <gtest/gtest.h>

#include <regex>

#include "http/routes/http_test_util.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

const char* kActionGbnf =
    "root ::= \"{\\\"action\\\":\\\"\" ( \"tap\\\",\\\"index\\\":\" [0-9] [0-9]? | \"back\\\"\" ) \"}\"\n";

Json action_schema() {
  return Json::parse(R"({"oneOf": [
    {"type": "object", "properties": {"action": {"const": "tap"}, "index": {"type": "integer", "minimum": 0, "maximum": 99}},
     "required": ["action", "index"], "additionalProperties": false},
    {"type": "object", "properties": {"action": {"const": "back"}}, "required": ["action"], "additionalProperties": false}]})");
}

Json action_chat(const std::string& user) {
  return Json{{"messages", Json::array({Json{{"role", "system"}, {"content", "Answer with one JSON action."}},
                                        Json{{"role", "user"}, {"content", user}}})},
              {"max_tokens", 32},
              {"temperature", 0}};
}


void expect_action(const std::string& content) {
  Json j;
  ASSERT_NO_THROW(j = Json::parse(content)) << content;
  ASSERT_TRUE(j.is_object()) << content;
  ASSERT_TRUE(j.contains("action")) << content;
  const std::string a = j["action"];
  EXPECT_TRUE(a == "tap" || a == "back") << content;
  if (a == "tap") EXPECT_TRUE(j["index"].is_number_integer()) << content;
}

void expect_400(const httplib::Result& r, const std::string& fragment) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(fragment), std::string::npos) << r->body;
}

TEST(HttpGrammar, CompletionGrammarAndJsonSchemaGiveParsableActions) {
  TestServer s(small_engine());
  Json body{{"prompt", "Screen: [0] Back [1] Search. Action:"}, {"n_predict", 32}, {"temperature", 0}, {"grammar", kActionGbnf}};
  auto r = post_json(s, "/completion", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  expect_action(j["content"]);
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["stop_type"], "eos");
  for (const char* k : {"drafts_forced", "drafts_mtp", "drafts_accepted", "grammar_ms"})
    EXPECT_TRUE(j["timings"].contains(k)) << k;

  // llama.cpp: json_schema is used only without a grammar; grammar wins when both are sent.
  Json by_schema{{"prompt", "Screen: [0] Back [1] Search. Action:"}, {"n_predict", 32}, {"temperature", 0},
                 {"json_schema", action_schema()}, {"tandem", {{"json_whitespace", "compact"}}}};
  r = post_json(s, "/completion", by_schema);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = Json::parse(r->body);
  expect_action(j["content"]);
  by_schema["grammar"] = "root ::= \"{\\\"action\\\":\\\"back\\\"}\"";
  r = post_json(s, "/completion", by_schema);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body)["content"], "{\"action\":\"back\"}");
}

TEST(HttpGrammar, ChatResponseFormatsWholeAndStreamed) {
  serve::EngineConfig cfg = small_engine();
  cfg.speculation.enabled = true;
  TestServer s(cfg);
  Json body = action_chat("Task: go back.");
  body["response_format"] = Json{{"type", "json_schema"},
                                 {"json_schema", Json{{"name", "action"}, {"strict", true}, {"schema", action_schema()}}}};
  body["tandem"] = Json{{"json_whitespace", "compact"}};
  auto r = post_json(s, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json whole = Json::parse(r->body);
  const std::string content = whole["choices"][0]["message"]["content"];
  expect_action(content);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  EXPECT_GT(whole["timings"]["drafts_forced"].get<int64_t>(), 0) << r->body;

  // The same request streamed: the same text, chunk by chunk.
  body["stream"] = true;
  r = post_json(s, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string streamed;
  std::string finish;
  for (const std::string& data : sse_data(r->body)) {
    if (data == "[DONE]") continue;
    const Json ev = Json::parse(data);
    if (!ev.contains("choices") || ev["choices"].empty()) continue;
    const Json& ch = ev["choices"][0];
    if (ch["delta"].contains("content")) streamed += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
  }
  EXPECT_EQ(streamed, content);
  EXPECT_EQ(finish, "stop");

  // json_object: constrained to a JSON object (llama.cpp's default chat path leaves it free).
  Json obj = action_chat("Task: describe the screen.");
  obj["response_format"] = Json{{"type", "json_object"}};
  obj["max_tokens"] = 48;
  r = post_json(s, "/v1/chat/completions", obj);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json jo = Json::parse(r->body);
  const std::string text = jo["choices"][0]["message"]["content"];
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find_first_not_of(" \n\t"), text.find('{')) << text;
  if (jo["choices"][0]["finish_reason"] == "stop") {
    Json parsed;
    ASSERT_NO_THROW(parsed = Json::parse(text)) << text;
    EXPECT_TRUE(parsed.is_object()) << text;
  }
}

TEST(HttpGrammar, BadGrammarsSchemasAndShapesAre400) {
  TestServer s(small_engine());
  const Json base{{"prompt", "x"}, {"n_predict", 4}};
  Json b = base;
  b["grammar"] = "root ::= \"unterminated";
  expect_400(post_json(s, "/completion", b), "grammar");
  b = base;
  b["grammar"] = "item ::= \"a\"";  // no root
  expect_400(post_json(s, "/completion", b), "root");
  b = base;
  b["grammar"] = "root ::= undefined-rule";
  expect_400(post_json(s, "/completion", b), "undefined-rule");
  b = base;
  b["grammar"] = 17;
  expect_400(post_json(s, "/completion", b), "grammar");
  b = base;
  b["json_schema"] = Json{{"type", "hiccup"}};
  expect_400(post_json(s, "/completion", b), "hiccup");
  b = base;
  b["json_schema"] = 123;
  expect_400(post_json(s, "/completion", b), "json_schema");

  Json c = action_chat("hi");
  c["response_format"] = Json{{"type", "sound"}};
  expect_400(post_json(s, "/v1/chat/completions", c), "response_format type must be one of");
  c = action_chat("hi");
  c["response_format"] = Json{{"type", "json_object"}, {"schema", 123}};
  expect_400(post_json(s, "/v1/chat/completions", c), "schema");
  c = action_chat("hi");
  c["response_format"] = Json{{"type", "json_schema"}, {"json_schema", Json{{"schema", Json{{"type", 123}}}}}};
  expect_400(post_json(s, "/v1/chat/completions", c), "schema");
  c = action_chat("hi");
  c["json_schema"] = action_schema();
  c["grammar"] = kActionGbnf;
  expect_400(post_json(s, "/v1/chat/completions", c), "Cannot use both json_schema and grammar");
  c = action_chat("hi");
  c["grammar"] = kActionGbnf;
  c["tools"] = Json::array({Json{{"type", "function"}, {"function", Json{{"name", "f"}, {"parameters", Json::object()}}}}});
  expect_400(post_json(s, "/v1/chat/completions", c), "tools");
  c = action_chat("hi");
  c["tandem"] = Json{{"json_whitespace", "tight"}};
  c["response_format"] = Json{{"type", "json_object"}};
  expect_400(post_json(s, "/v1/chat/completions", c), "json_whitespace");

  // Streaming: the error comes as a plain HTTP error, not as an event stream.
  c = action_chat("hi");
  c["stream"] = true;
  c["grammar"] = "root ::= [";
  auto r = post_json(s, "/v1/chat/completions", c);
  expect_400(r, "grammar");
  EXPECT_EQ(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);

  // The server still serves.
  auto ok = post_json(s, "/completion", Json{{"prompt", "x"}, {"n_predict", 2}, {"grammar", kActionGbnf}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(HttpGrammar, UnsupportedKeywordsAreWarningsAndTheCacheIsReported) {
  TestServer s(small_engine());
  Json schema = action_schema();
  schema["oneOf"][0]["properties"]["index"]["multipleOf"] = 2;  // not enforced: a warning
  const Json body{{"prompt", "Action:"}, {"n_predict", 24}, {"temperature", 0}, {"json_schema", schema}};
  for (int i = 0; i < 2; ++i) {
    auto r = post_json(s, "/completion", body);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const Json j = Json::parse(r->body);
    ASSERT_TRUE(j.contains("warnings")) << r->body;
    EXPECT_NE(to_text(j["warnings"]).find("multipleOf"), std::string::npos) << j["warnings"];
  }
  auto m = s.client()->Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* k : {"tandem_grammar_requests_total 2", "tandem_grammar_cache_entries 1", "tandem_grammar_cache_hits_total 1",
                        "tandem_grammar_cache_misses_total 1", "tandem_request_drafts_forced_total"})
    EXPECT_NE(m->body.find(k), std::string::npos) << k;
}

}  // namespace
}  // namespace tandem::http
