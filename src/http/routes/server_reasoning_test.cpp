// Reasoning split off chat answers (issue 45, text/reasoning.h): reasoning_format none / auto /
// deepseek / deepseek-legacy, whole and streamed, the server's default and the request's field,
// a prompt that opened the think block (Qwen3.5's template), /completion's raw text, the 400s.
// The tiny model's answers are random; a grammar makes them the text each test needs.
#include <gtest/gtest.h>

#include "http/routes/http_test_util.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

const char* kThinkingAnswer = "<think>\nfind the menu\n</think>\n\nTap [2]";

// A chat request whose answer the grammar fixes to `answer`.
Json chat_answering(const std::string& answer) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "Plan, then act."}}})},
              {"max_tokens", 64},
              {"temperature", 0},
              {"grammar", "root ::= " + Json(answer).dump()}};
}

struct StreamedAnswer {
  std::string reasoning, content;
  bool content_after_reasoning = false;  // a reasoning delta came after a content delta
  std::string finish_reason;
};

StreamedAnswer stream_answer(TestServer& s, const Json& body) {
  StreamedAnswer out;
  for (const Json& ch : streamed_choices(s, body)) {
    const Json& d = ch["delta"];
    if (d.contains("reasoning_content")) {
      out.content_after_reasoning |= !out.content.empty();
      out.reasoning += d["reasoning_content"].get<std::string>();
    }
    if (d.contains("content")) out.content += d["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) out.finish_reason = ch["finish_reason"];
  }
  return out;
}

Json chat_message(TestServer& s, const Json& body) {
  auto r = post_json(s, "/v1/chat/completions", body);
  const Json j = parse_body(r);
  EXPECT_EQ(r->status, 200) << r->body;
  return j["choices"][0]["message"];
}

TEST(HttpReasoning, ThinkBlockSplitOffWholeAndStreamedUnderEachFormat) {
  TestServer s(small_engine());
  Json body = chat_answering(kThinkingAnswer);
  // The server's default, auto: as deepseek.
  Json m = chat_message(s, body);
  EXPECT_EQ(m["reasoning_content"], "find the menu");
  EXPECT_EQ(m["content"], "Tap [2]");
  StreamedAnswer st = stream_answer(s, body);
  EXPECT_EQ(st.reasoning, "find the menu");
  EXPECT_EQ(st.content, "Tap [2]");
  EXPECT_FALSE(st.content_after_reasoning);
  EXPECT_EQ(st.finish_reason, "stop");

  body["reasoning_format"] = "deepseek";
  EXPECT_EQ(chat_message(s, body)["reasoning_content"], "find the menu");

  body["reasoning_format"] = "none";
  m = chat_message(s, body);
  EXPECT_EQ(m["content"], kThinkingAnswer);
  EXPECT_FALSE(m.contains("reasoning_content")) << m;
  st = stream_answer(s, body);
  EXPECT_EQ(st.content, kThinkingAnswer);
  EXPECT_EQ(st.reasoning, "");

  // deepseek-legacy: the block stays in content and fills reasoning_content; streamed as none.
  body["reasoning_format"] = "deepseek-legacy";
  m = chat_message(s, body);
  EXPECT_EQ(m["content"], kThinkingAnswer);
  EXPECT_EQ(m["reasoning_content"], "find the menu");
  st = stream_answer(s, body);
  EXPECT_EQ(st.content, kThinkingAnswer);
  EXPECT_EQ(st.reasoning, "");

  // An answer without a block is content, with no reasoning_content.
  m = chat_message(s, chat_answering("Tap [2]"));
  EXPECT_EQ(m["content"], "Tap [2]");
  EXPECT_FALSE(m.contains("reasoning_content")) << m;

  // /completion returns the text as generated.
  const Json c = parse_body(post_json(s, "/completion", Json{{"prompt", "Plan, then act."},
                                                              {"n_predict", 64},
                                                              {"reasoning_format", "deepseek"},
                                                              {"grammar", body["grammar"]}}));
  EXPECT_EQ(c["content"], kThinkingAnswer);
}

TEST(HttpReasoning, BadFormatIsA400NamingTheField) {
  TestServer s(small_engine());
  for (const Json& bad : {Json("r1"), Json("DeepSeek"), Json(3)}) {
    Json body = chat_answering("Tap");
    body["reasoning_format"] = bad;
    auto r = post_json(s, "/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const Json e = Json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], "reasoning_format") << r->body;
    if (bad.is_string()) {
      EXPECT_EQ(e["message"], "'reasoning_format' must be none, auto, deepseek or deepseek-legacy, got \"" +
                                  bad.get<std::string>() + "\"");
    }
  }
}

// --reasoning-format none on the server; a request's field overrides it.
TEST(HttpReasoning, ServerDefaultAndTheRequestsOverride) {
  TestServer s(small_engine(), [](HttpServerConfig& hc) { hc.reasoning_format = text::ReasoningFormat::None; });
  Json body = chat_answering(kThinkingAnswer);
  EXPECT_EQ(chat_message(s, body)["content"], kThinkingAnswer);
  body["reasoning_format"] = "auto";
  EXPECT_EQ(chat_message(s, body)["content"], "Tap [2]");
}

// Qwen3.5's generation prompt ends in "<think>\n": the answer starts in its reasoning. With
// enable_thinking false the template closes the block and the answer is content.
TEST(HttpReasoning, AnswerStartingInsideTheBlockTheTemplateOpened) {
  TinyModel& tiny = TinyModel::get();
  const text::ChatTemplate qwen35(text::ChatTemplateFamily::Qwen35);
  TestServer s(*tiny.model, *tiny.tok, qwen35, small_engine());
  Json body = chat_answering("look at the screen\n</think>\n\nTap [2]");
  Json m = chat_message(s, body);
  EXPECT_EQ(m["reasoning_content"], "look at the screen");
  EXPECT_EQ(m["content"], "Tap [2]");
  const StreamedAnswer st = stream_answer(s, body);
  EXPECT_EQ(st.reasoning, "look at the screen");
  EXPECT_EQ(st.content, "Tap [2]");

  // Cut off inside the reasoning (max_tokens): all of it is reasoning.
  body["max_tokens"] = 3;
  m = chat_message(s, body);
  EXPECT_EQ(m["content"], "");
  EXPECT_FALSE(m["reasoning_content"].get<std::string>().empty()) << m;
  EXPECT_EQ(std::string("look at the screen").find(m["reasoning_content"].get<std::string>()), 0u) << m;

  body = chat_answering("Tap [2]");
  body["chat_template_kwargs"] = Json{{"enable_thinking", false}};
  m = chat_message(s, body);
  EXPECT_EQ(m["content"], "Tap [2]");
  EXPECT_FALSE(m.contains("reasoning_content")) << m;
}

}  // namespace
}  // namespace tandem::http
