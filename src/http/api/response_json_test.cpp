// Chat answers in OpenAI's shapes (issue 45): reasoning_content, tool_calls and the "tool_calls"
// finish reason, whole and as stream chunks.
#include "http/api/response_json.h"

#include <gtest/gtest.h>

#include <set>

namespace tandem::http {
namespace {

serve::GenerationResult finished_as(serve::FinishReason reason) {
  serve::GenerationResult r;
  r.reason = reason;
  r.started = true;
  return r;
}

ResponseMeta response_meta(const std::string& id) {
  ResponseMeta m;
  m.id = id;
  m.created = 1;
  m.model = "tiny";
  return m;
}

void expect_call_id(const Json& id) {
  ASSERT_TRUE(id.is_string()) << id;
  const std::string s = id;
  EXPECT_EQ(s.rfind("call_", 0), 0u) << s;
  EXPECT_EQ(s.size(), 29u) << s;
}

TEST(ChatResponse, MessageCarriesReasoningAndToolCalls) {
  const ResponseMeta m = response_meta("chatcmpl-1");
  text::ChatAnswer a;
  a.reasoning = "find the menu";
  a.tool_calls = {{"tap", R"({"index":3})"}, {"back", "{}"}};
  Json j = chat_completion_json(m, finished_as(serve::FinishReason::EndOfGeneration), 5, a);
  const Json& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const Json& msg = choice["message"];
  EXPECT_TRUE(msg["content"].is_null()) << msg;  // no text besides the calls
  EXPECT_EQ(msg["reasoning_content"], "find the menu");
  ASSERT_EQ(msg["tool_calls"].size(), 2u) << msg;
  for (size_t k = 0; k < 2; ++k) {
    const Json& c = msg["tool_calls"][k];
    expect_call_id(c["id"]);
    EXPECT_FALSE(c.contains("index")) << c;
    EXPECT_EQ(c["type"], "function");
    EXPECT_EQ(c["function"]["name"], a.tool_calls[k].name);
    EXPECT_EQ(c["function"]["arguments"], a.tool_calls[k].arguments);
  }
  EXPECT_NE(msg["tool_calls"][0]["id"], msg["tool_calls"][1]["id"]);

  // Cut off by the length limit: "length" even with calls; text before the calls stays content.
  a.content = "Opening.";
  j = chat_completion_json(m, finished_as(serve::FinishReason::Length), 5, a);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Opening.");

  // No reasoning, no calls: neither field.
  text::ChatAnswer hi;
  hi.content = "Hi";
  j = chat_completion_json(m, finished_as(serve::FinishReason::StopString), 5, hi);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["message"], Json::parse(R"({"role": "assistant", "content": "Hi"})"));
}

// Per call, the name first (with the id, type and empty arguments), then the arguments.
TEST(ChatResponse, StreamedToolCallsNameFirstThenArguments) {
  const ResponseMeta m = response_meta("chatcmpl-2");
  const std::vector<text::ToolCall> calls = {{"tap", R"({"index":3})"}, {"back", "{}"}};
  const std::vector<Json> chunks = chat_tool_call_chunks(m, calls);
  ASSERT_EQ(chunks.size(), 4u);
  std::set<std::string> ids;
  for (size_t k = 0; k < calls.size(); ++k) {
    const Json& head = chunks[2 * k]["choices"][0];
    const Json& args = chunks[2 * k + 1]["choices"][0];
    EXPECT_EQ(head["delta"].size(), 1u) << head;
    EXPECT_TRUE(head["finish_reason"].is_null());
    const Json& h = head["delta"]["tool_calls"][0];
    EXPECT_EQ(h["index"], k);
    expect_call_id(h["id"]);
    ids.insert(h["id"].get<std::string>());
    EXPECT_EQ(h["type"], "function");
    EXPECT_EQ(h["function"], Json::parse(R"({"name": ")" + calls[k].name + R"(", "arguments": ""})"));
    EXPECT_EQ(args["delta"]["tool_calls"][0], Json::parse(R"({"index": )" + std::to_string(k) +
                                                           R"(, "function": {"arguments": )" +
                                                           Json(calls[k].arguments).dump() + "}}"));
    EXPECT_EQ(chunks[2 * k]["object"], "chat.completion.chunk");
  }
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(chat_final_chunk_json(m, finished_as(serve::FinishReason::EndOfGeneration), true)["choices"][0]["finish_reason"],
            "tool_calls");
  EXPECT_EQ(chat_final_chunk_json(m, finished_as(serve::FinishReason::EndOfGeneration))["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(chat_tool_call_chunks(m, {}).empty());
}

}  // namespace
}  // namespace tandem::http
