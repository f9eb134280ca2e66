#include "text/chat_answer.h"

namespace tandem::text {

ChatAnswerStream::ChatAnswerStream(const ChatAnswerFormat& f) {
  if (streams_reasoning(f.reasoning)) reasoning_.emplace(f.starts_in_reasoning);
  if (f.tool_calls != ToolCallFormat::None && f.tools) tool_calls_.emplace(f.tool_calls, *f.tools);
}

void ChatAnswerStream::to_content(std::string_view text, std::string& content) {
  if (tool_calls_) tool_calls_->push(text, content);
  else content.append(text);
}

void ChatAnswerStream::push(std::string_view piece, ChatAnswer& delta) {
  if (!reasoning_) return to_content(piece, delta.content);
  scratch_.clear();
  reasoning_->push(piece, delta.reasoning, scratch_);
  to_content(scratch_, delta.content);
}

void ChatAnswerStream::finish(ChatAnswer& delta) {
  if (reasoning_) {
    scratch_.clear();
    reasoning_->finish(delta.reasoning, scratch_);
    to_content(scratch_, delta.content);
  }
  if (tool_calls_) delta.tool_calls = tool_calls_->finish(delta.content);
}

ChatAnswer parse_chat_answer(std::string_view text, const ChatAnswerFormat& f) {
  ChatAnswer a;
  ChatAnswerStream s(f);
  s.push(text, a);
  s.finish(a);
  if (f.reasoning == ReasoningFormat::DeepseekLegacy) a.reasoning = split_reasoning(text, f.starts_in_reasoning).reasoning;
  return a;
}

}  // namespace tandem::text
