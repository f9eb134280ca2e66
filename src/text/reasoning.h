// Reasoning split off an answer (issue 45, item 4): a leading <think>...</think> block goes to
// OpenAI's reasoning_content, the rest stays content, as llama.cpp's server does under
// --reasoning-format. The rules (llama.cpp's try_parse_reasoning on a finished answer):
//   - the block is recognized only at the start of the answer (after whitespace, which is dropped),
//     or from the first byte when the prompt left a block open (Qwen3.5's generation prompt ends
//     in "<think>\n": ChatTemplate::opens_thinking);
//   - the reasoning is the text up to </think> with surrounding whitespace stripped; empty
//     reasoning is none; whitespace after </think> is dropped and the rest is content verbatim;
//   - an answer that ends inside the block (no </think>: a length limit, a stop string) is all
//     reasoning; anything else is all content.
// The splitter works on the streamed pieces as they arrive, holding back only what could still be
// the tag or whitespace to strip, so a streamed answer's deltas add up to exactly the whole
// answer's split (split_reasoning runs the same splitter over the whole text).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::text {

// llama.cpp's reasoning formats (common_reasoning_format), by their flag names.
enum class ReasoningFormat : uint8_t {
  None,            // "none": the answer's text as generated, in content
  Auto,            // "auto" (llama.cpp's default): as deepseek
  Deepseek,        // "deepseek": reasoning in reasoning_content, streamed as reasoning_content deltas
  DeepseekLegacy,  // "deepseek-legacy": content keeps the <think> block, reasoning_content has it
                   // too; a stream is as "none" (llama.cpp: thoughts stay inline when streaming)
};
// "none", "auto", "deepseek", "deepseek-legacy"; nullopt for any other name.
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);
const char* reasoning_format_name(ReasoningFormat f);
// The names, for messages: "none, auto, deepseek or deepseek-legacy".
const char* reasoning_format_names();

class ReasoningSplitter {
 public:
  // starts_inside: the prompt opened the block, so the answer begins in its reasoning.
  explicit ReasoningSplitter(bool starts_inside = false);
  // Feeds the next piece of the answer; appends what is settled to reasoning and content.
  void push(std::string_view piece, std::string& reasoning, std::string& content);
  // The answer ended: appends what was held back.
  void finish(std::string& reasoning, std::string& content);

 private:
  enum class State : uint8_t { Start, Reasoning, AfterReasoning, Content };
  void advance(std::string& reasoning, std::string& content, bool at_end);
  State state_;
  bool reasoning_begun_ = false;  // some reasoning was released (its leading whitespace is gone)
  std::string held_;
};

struct SplitAnswer {
  std::string reasoning;  // empty: none
  std::string content;
};
// A whole answer, split as the streamed pieces would be.
SplitAnswer split_reasoning(std::string_view answer, bool starts_inside);
// Whether a streamed answer's reasoning goes out as reasoning_content deltas under f (deepseek,
// auto); otherwise the stream is the text as content (chat_answer.h).
bool streams_reasoning(ReasoningFormat f);

}  // namespace tandem::text
