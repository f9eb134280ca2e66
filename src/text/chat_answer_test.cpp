// Chat answers split into reasoning, content and tool calls: each case's fields exactly, for the
// whole answer and for the answer streamed in any pieces (byte by byte, and cut in two at every
// place), which must add up to the same fields.
#include "text/chat_answer.h"

#include <gtest/gtest.h>

#include <vector>

namespace tandem::text {
namespace {

const Json& answer_tools() {
  static const Json tools = Json::parse(R"([
    {"type": "function", "function": {"name": "tap", "parameters": {"type": "object",
      "properties": {"index": {"type": "integer"}, "long": {"type": "boolean"}}, "required": ["index"]}}},
    {"type": "function", "function": {"name": "type_text", "parameters": {"type": "object",
      "properties": {"text": {"type": "string"}, "at": {"type": ["integer", "null"]}, "opts": {"type": "object"},
                     "any": {}}}}},
    {"name": "back"}])");
  return tools;
}

enum class Fmt { Plain, Think, ThinkOpen, Legacy, Xml, Json, ThinkXml, Py };

ChatAnswerFormat format_of(Fmt f) {
  ChatAnswerFormat a;
  a.reasoning = f == Fmt::Think || f == Fmt::ThinkOpen || f == Fmt::ThinkXml ? ReasoningFormat::Auto
                : f == Fmt::Legacy                                          ? ReasoningFormat::DeepseekLegacy
                                                                            : ReasoningFormat::None;
  a.starts_in_reasoning = f == Fmt::ThinkOpen;
  a.tool_calls = f == Fmt::Xml || f == Fmt::ThinkXml ? ToolCallFormat::Xml
                 : f == Fmt::Json                     ? ToolCallFormat::Json
                 : f == Fmt::Py                       ? ToolCallFormat::Python
                                                      : ToolCallFormat::None;
  a.tools = &answer_tools();
  return a;
}

struct AnswerCase {
  Fmt fmt;
  std::string text;
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

const std::string kTap = "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n</function>\n</tool_call>";
const std::string kTapPy = "<|tool_call_start|>[tap(index=3)]<|tool_call_end|>";
const std::string kTapJson = "<tool_call>\n{\"name\": \"tap\", \"arguments\": {\"index\": 3}}\n</tool_call>";

const std::vector<AnswerCase>& answer_cases() {
  static const std::vector<AnswerCase> cases = {
      // Reasoning (text/reasoning.h).
      {Fmt::Plain, "<think>\nplan\n</think>\n\nTap", "", "<think>\nplan\n</think>\n\nTap", {}},
      {Fmt::Think, "Hello", "", "Hello", {}},
      {Fmt::Think, "<think>\nplan a\n</think>\n\nTap", "plan a", "Tap", {}},
      {Fmt::ThinkOpen, "plan\n</think>\n\nTap", "plan", "Tap", {}},
      {Fmt::Think, "<think>\n\n</think>\n\nHi", "", "Hi", {}},  // an empty block is no reasoning
      {Fmt::ThinkOpen, "\n\n</think>\n\nHi", "", "Hi", {}},
      {Fmt::Think, "<think>\nstill thinking  ", "still thinking", "", {}},  // ended inside the block
      {Fmt::ThinkOpen, "abc \n", "abc", "", {}},
      {Fmt::Think, " \n<think>x</think>y", "x", "y", {}},  // blanks before the tag go
      {Fmt::Think, "Hi <think>x</think>", "", "Hi <think>x</think>", {}},  // not at the start: content
      {Fmt::Think, "<thi", "", "<thi", {}},
      {Fmt::Think, "\n\n", "", "\n\n", {}},
      {Fmt::Think, "", "", "", {}},
      {Fmt::ThinkOpen, "", "", "", {}},
      {Fmt::Think, "<think>a\n \nb</think> c </think> d\n", "a\n \nb", "c </think> d\n", {}},
      {Fmt::Think, "<think>a</thi", "a</thi", "", {}},  // a tag cut off is text
      {Fmt::Think, "<think>a < b </ c</think>\n<think>", "a < b </ c", "<think>", {}},
      {Fmt::Think, "<thinking>x", "", "<thinking>x", {}},
      {Fmt::Legacy, "<think>\nplan\n</think>\n\nTap", "plan", "<think>\nplan\n</think>\n\nTap", {}},
      // Tool calls, XML (Qwen3.5): values converted per the parameter's schema type.
      {Fmt::Xml, kTap, "", "", {{"tap", R"({"index":3})"}}},
      {Fmt::Xml, "I'll tap it.\n\n" + kTap + "\n", "", "I'll tap it.", {{"tap", R"({"index":3})"}}},
      {Fmt::Xml,
       "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n<parameter=long>\nTrue\n</parameter>\n"
       "</function>\n</tool_call>",
       "", "", {{"tap", R"({"index":3,"long":true})"}}},
      {Fmt::Xml,
       kTap + "\n<tool_call>\n<function=type_text>\n<parameter=text>\n12\nline two\n</parameter>\n<parameter=at>\nNone\n"
              "</parameter>\n<parameter=opts>\n{\"a\": [1]}\n</parameter>\n<parameter=any>\n[1, 2]\n</parameter>\n"
              "</function>\n</tool_call>",
       "", "", {{"tap", R"({"index":3})"}, {"type_text", R"({"text":"12\nline two","at":null,"opts":{"a":[1]},"any":[1,2]})"}}},
      {Fmt::Xml, "<tool_call>\n<function=back>\n</function>\n</tool_call>", "", "", {{"back", "{}"}}},
      {Fmt::Xml, "<tool_call><function=type_text><parameter=any>hello</parameter></function></tool_call>", "", "",
       {{"type_text", R"({"any":"hello"})"}}},
      // Broken calls stay text: the whole answer is content.
      {Fmt::Xml, "Tap.\n" + kTap.substr(0, kTap.size() - 1), "", "Tap.\n" + kTap.substr(0, kTap.size() - 1), {}},
      {Fmt::Xml, kTap + " then more", "", kTap + " then more", {}},  // text after the calls
      {Fmt::Xml, "<tool_call>\n<function=swipe>\n</function>\n</tool_call>", "",
       "<tool_call>\n<function=swipe>\n</function>\n</tool_call>", {}},  // not one of the tools
      {Fmt::Xml, "<tool_call>\n<function=tap>\n</function>\n</tool_call>", "",
       "<tool_call>\n<function=tap>\n</function>\n</tool_call>", {}},  // a required parameter missing
      {Fmt::Xml, "<tool_call>\n<function=tap>\n<parameter=index>\nthree\n</parameter>\n</function>\n</tool_call>", "",
       "<tool_call>\n<function=tap>\n<parameter=index>\nthree\n</parameter>\n</function>\n</tool_call>", {}},
      {Fmt::Xml, "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n<parameter=index>\n4\n</parameter>\n"
                 "</function>\n</tool_call>",
       "", "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n<parameter=index>\n4\n</parameter>\n"
           "</function>\n</tool_call>", {}},
      {Fmt::Xml, "no calls < here", "", "no calls < here", {}},
      {Fmt::Plain, kTap, "", kTap, {}},  // a family without a call format
      // Tool calls, JSON (Qwen3, Granite-4.0).
      {Fmt::Json, "Sure.\n" + kTapJson, "", "Sure.", {{"tap", R"({"index":3})"}}},
      {Fmt::Json, "<tool_call>\n{\"name\": \"tap\", \"arguments\": \"{\\\"index\\\": 3}\"}\n</tool_call>", "", "",
       {{"tap", R"({"index":3})"}}},
      {Fmt::Json, kTapJson + "\n" + kTapJson, "", "", {{"tap", R"({"index":3})"}, {"tap", R"({"index":3})"}}},
      {Fmt::Json, "<tool_call>\n{\"name\": \"tap\", \"arguments\": {\"index\": \"3\"}}\n</tool_call>", "",
       "<tool_call>\n{\"name\": \"tap\", \"arguments\": {\"index\": \"3\"}}\n</tool_call>", {}},  // a string for an integer
      {Fmt::Json, "<tool_call>\n{\"name\": \"tap\"\n</tool_call>", "", "<tool_call>\n{\"name\": \"tap\"\n</tool_call>", {}},
      // Tool calls, Pythonic (LFM2): Python literals (and the JSON ones its template renders).
      {Fmt::Py, kTapPy, "", "", {{"tap", R"({"index":3})"}}},
      {Fmt::Py, "I'll tap it.\n" + kTapPy + "\n", "", "I'll tap it.", {{"tap", R"({"index":3})"}}},
      {Fmt::Py, kTapPy + "Tapped.", "", "Tapped.", {{"tap", R"({"index":3})"}}},  // the template's content after calls
      {Fmt::Py, "Hi\n" + kTapPy + "\nDone. ", "", "Hi\nDone. ", {{"tap", R"({"index":3})"}}},
      {Fmt::Py,
       "<|tool_call_start|>[tap(index=3, long=True), type_text(text='it\\'s \"x\"\\n\\u00e9', at=None, "
       "opts={'a': [1, -2.5e1, False]}, any=(1,),)]<|tool_call_end|>",
       "", "", {{"tap", R"({"index":3,"long":true})"}, {"type_text", R"({"text":"it's \"x\"\né","at":null,"opts":{"a":[1,-25.0,false]},"any":[1]})"}}},
      {Fmt::Py, "<|tool_call_start|>[type_text(text=\"a\", at=null, any=true), back()]<|tool_call_end|>", "", "",
       {{"type_text", R"({"text":"a","at":null,"any":true})"}, {"back", "{}"}}},
      {Fmt::Py, kTapPy + "\n" + kTapPy, "", "", {{"tap", R"({"index":3})"}, {"tap", R"({"index":3})"}}},
      // Broken calls stay text.
      {Fmt::Py, "<|tool_call_start|>[tap(index=\"3\")]<|tool_call_end|>", "",
       "<|tool_call_start|>[tap(index=\"3\")]<|tool_call_end|>", {}},  // a string for an integer
      {Fmt::Py, "<|tool_call_start|>[tap(index=3)<|tool_call_end|>", "", "<|tool_call_start|>[tap(index=3)<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[tap(index=3)]", "", "<|tool_call_start|>[tap(index=3)]", {}},  // no end tag
      {Fmt::Py, "<|tool_call_start|>[]<|tool_call_end|>", "", "<|tool_call_start|>[]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[swipe()]<|tool_call_end|>", "", "<|tool_call_start|>[swipe()]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[tap()]<|tool_call_end|>", "", "<|tool_call_start|>[tap()]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[tap(index=3) back()]<|tool_call_end|>", "",
       "<|tool_call_start|>[tap(index=3) back()]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[tap(index=3, index=4)]<|tool_call_end|>", "",
       "<|tool_call_start|>[tap(index=3, index=4)]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[type_text(text='open)]<|tool_call_end|>", "",
       "<|tool_call_start|>[type_text(text='open)]<|tool_call_end|>", {}},
      {Fmt::Py, "<|tool_call_start|>[type_text(any=" + std::string(100, '[') + std::string(100, ']') + ")]<|tool_call_end|>",
       "", "<|tool_call_start|>[type_text(any=" + std::string(100, '[') + std::string(100, ']') + ")]<|tool_call_end|>",
       {}},  // nested too deep
      {Fmt::Py, "<|tool_call_start|>[tap(index=three)]<|tool_call_end|>", "",
       "<|tool_call_start|>[tap(index=three)]<|tool_call_end|>", {}},
      {Fmt::Json, kTapPy, "", kTapPy, {}},  // another family's format
      // Both: the reasoning first, the calls in the rest.
      {Fmt::ThinkXml, "<think>\nfind it\n</think>\n\nOpening.\n" + kTap, "find it", "Opening.", {{"tap", R"({"index":3})"}}},
      {Fmt::ThinkXml, "<think>\n" + kTap + "\n</think>\nNo.", kTap, "No.", {}},  // a call inside the reasoning is reasoning
  };
  return cases;
}

void expect_answer(const ChatAnswer& a, const AnswerCase& c) {
  EXPECT_EQ(a.reasoning, c.reasoning);
  EXPECT_EQ(a.content, c.content);
  ASSERT_EQ(a.tool_calls.size(), c.calls.size());
  for (size_t k = 0; k < c.calls.size(); ++k) {
    EXPECT_EQ(a.tool_calls[k].name, c.calls[k].first);
    EXPECT_EQ(a.tool_calls[k].arguments, c.calls[k].second);
  }
}

// The answer streamed in the given pieces; legacy's reasoning, which is not streamed, left out.
ChatAnswer streamed_answer(const AnswerCase& c, const std::vector<std::string_view>& pieces) {
  ChatAnswerStream s(format_of(c.fmt));
  ChatAnswer a;
  for (std::string_view p : pieces) s.push(p, a);
  s.finish(a);
  if (c.fmt == Fmt::Legacy) a.reasoning = c.reasoning;
  return a;
}

TEST(ChatAnswer, EachCaseWhole) {
  for (const AnswerCase& c : answer_cases()) {
    SCOPED_TRACE(c.text);
    expect_answer(parse_chat_answer(c.text, format_of(c.fmt)), c);
  }
}

TEST(ChatAnswer, EachCaseStreamedInAnyPieces) {
  for (const AnswerCase& c : answer_cases()) {
    SCOPED_TRACE(c.text);
    std::vector<std::string_view> bytes;
    for (size_t i = 0; i < c.text.size(); ++i) bytes.push_back(std::string_view(c.text).substr(i, 1));
    expect_answer(streamed_answer(c, bytes), c);
    for (size_t cut = 0; cut <= c.text.size(); ++cut) {
      SCOPED_TRACE("cut at " + std::to_string(cut));
      expect_answer(streamed_answer(c, {std::string_view(c.text).substr(0, cut), std::string_view(c.text).substr(cut)}), c);
    }
  }
}

// A stream releases content up to a possible call at once and keeps the calls to the end.
TEST(ChatAnswer, StreamReleasesContentBeforeTheCalls) {
  ChatAnswerStream s(format_of(Fmt::ThinkXml));
  ChatAnswer a;
  s.push("<think>\nlook</think>\nOpening the menu.\n\n<tool", a);
  EXPECT_EQ(a.reasoning, "look");
  EXPECT_EQ(a.content, "Opening the menu.");
  s.push(kTap.substr(5), a);
  EXPECT_EQ(a.content, "Opening the menu.");
  EXPECT_TRUE(a.tool_calls.empty());
  s.finish(a);
  ASSERT_EQ(a.tool_calls.size(), 1u);
  EXPECT_EQ(a.tool_calls[0].arguments, R"({"index":3})");
}

// The turn a template writes for an assistant's calls parses back to the same calls and content.
TEST(ChatAnswer, CallsTheTemplateRendersParseBack) {
  const Json args = Json::parse(R"({"text": "12\nline two", "at": null, "opts": {"a": [1]}})");
  ChatRequest req;
  req.add_generation_prompt = false;
  req.messages.resize(2);
  req.messages[0].role = "user";
  req.messages[0].content = "go";
  req.messages[1].role = "assistant";
  req.messages[1].content = "Opening.";
  req.messages[1].tool_calls = {ChatToolCall{"type_text", args}, ChatToolCall{"back", Json::object()}};
  for (ChatTemplateFamily family :
       {ChatTemplateFamily::Qwen35, ChatTemplateFamily::Qwen3, ChatTemplateFamily::Granite4, ChatTemplateFamily::LFM2}) {
    SCOPED_TRACE(chat_template_family_name(family));
    const std::string text = ChatTemplate(family).render(req).text;
    const bool granite = family == ChatTemplateFamily::Granite4;
    const std::string open = granite ? "<|start_of_role|>assistant<|end_of_role|>" : "<|im_start|>assistant\n";
    const size_t from = text.find(open) + open.size();
    const std::string turn = text.substr(from, text.find(granite ? "<|end_of_text|>" : "<|im_end|>", from) - from);
    ChatAnswerFormat f = format_of(Fmt::Think);
    f.tool_calls = tool_call_format(family);
    const ChatAnswer a = parse_chat_answer(turn, f);
    EXPECT_EQ(a.reasoning, "") << turn;
    EXPECT_EQ(a.content, "Opening.") << turn;
    ASSERT_EQ(a.tool_calls.size(), 2u) << turn;
    EXPECT_EQ(a.tool_calls[0].name, "type_text");
    EXPECT_EQ(Json::parse(a.tool_calls[0].arguments), args);
    EXPECT_EQ(a.tool_calls[1].name, "back");
    EXPECT_EQ(a.tool_calls[1].arguments, "{}");
  }
}

TEST(ChatAnswer, ToolCallValuesFollowTheSchemaTypes) {
  const auto value = [](const char* text, const char* schema) {
    const Json s = Json::parse(schema);
    return tool_call_value(text, &s);
  };
  EXPECT_EQ(value("42", R"({"type": "integer"})"), Json(42));
  EXPECT_EQ(value("42", R"({"type": "string"})"), Json("42"));
  EXPECT_EQ(value("4.5", R"({"type": "number"})"), Json(4.5));
  EXPECT_EQ(value("4.5", R"({"type": "integer"})"), std::nullopt);
  EXPECT_EQ(value("False", R"({"type": "boolean"})"), Json(false));
  EXPECT_EQ(value("yes", R"({"type": "boolean"})"), std::nullopt);
  EXPECT_EQ(value("None", R"({"type": ["null", "integer"]})"), Json(nullptr));
  EXPECT_EQ(value("7", R"({"type": ["null", "integer"]})"), Json(7));
  EXPECT_EQ(value("[1]", R"({"type": "object"})"), std::nullopt);
  EXPECT_EQ(value("{\"a\": 1}", R"({"type": "object"})"), Json::parse(R"({"a": 1})"));
  EXPECT_EQ(value("x y", R"({})"), Json("x y"));
  EXPECT_EQ(tool_call_value("true", nullptr), Json(true));
  EXPECT_EQ(tool_call_format(ChatTemplateFamily::Qwen35), ToolCallFormat::Xml);
  EXPECT_EQ(tool_call_format(ChatTemplateFamily::Qwen3), ToolCallFormat::Json);
  EXPECT_EQ(tool_call_format(ChatTemplateFamily::Granite4), ToolCallFormat::Json);
  EXPECT_EQ(tool_call_format(ChatTemplateFamily::ChatML), ToolCallFormat::None);
  EXPECT_EQ(tool_call_format(ChatTemplateFamily::LFM2), ToolCallFormat::Python);
}

}  // namespace
}  // namespace tandem::text
