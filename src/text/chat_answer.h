// A chat answer as the API returns it (issue 45): the text the model generated, its reasoning
// split off first (reasoning.h), then its tool calls parsed out of the rest (tool_calls.h).
// ChatAnswerStream does it piece by piece for a streamed answer; parse_chat_answer runs the same
// stream over a whole answer, so both return the same fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/reasoning.h"
#include "text/tool_calls.h"

namespace tandem::text {

struct ChatAnswerFormat {
  ReasoningFormat reasoning = ReasoningFormat::None;
  bool starts_in_reasoning = false;  // the prompt opened the think block (ChatTemplate::opens_thinking)
  ToolCallFormat tool_calls = ToolCallFormat::None;  // None also when the request has no tools
  const Json* tools = nullptr;  // the request's tools (must outlive the stream)
};

struct ChatAnswer {
  std::string reasoning;  // empty: none
  std::string content;
  std::vector<ToolCall> tool_calls;
};

class ChatAnswerStream {
 public:
  explicit ChatAnswerStream(const ChatAnswerFormat& f);
  // Appends what the next piece settles (a stream's reasoning under deepseek / auto only).
  void push(std::string_view piece, ChatAnswer& delta);
  // The answer ended: what was held back, and the tool calls.
  void finish(ChatAnswer& delta);

 private:
  void to_content(std::string_view text, std::string& content);
  std::optional<ReasoningSplitter> reasoning_;
  std::optional<ToolCallSplitter> tool_calls_;
  std::string scratch_;  // the reasoning splitter's content, on its way to the tool calls'
};

// A whole answer. deepseek-legacy, which streams the text unsplit, fills reasoning here and keeps
// the text (and any calls after it) as it streams.
ChatAnswer parse_chat_answer(std::string_view text, const ChatAnswerFormat& f);

}  // namespace tandem::text
