// Tool calls out of an answer (issue 45, item 1): the calls a model wrote in its chat template's
// format become OpenAI's message.tool_calls (function name, arguments as JSON text), as
// llama.cpp's chat parsers read them:
//   XML (Qwen3.5)             <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...
//                             </function>\n</tool_call>; each VALUE (one newline either side dropped)
//                             converted per the tool's parameter schema (tool_call_value)
//   JSON (Qwen3, Granite-4.0) <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
//   Python (LFM2)             <|tool_call_start|>[NAME(KEY=VALUE, ...), ...]<|tool_call_end|>;
//                             each VALUE a Python literal ('…' or "…" strings with backslash
//                             escapes, numbers, True / False / None, lists, tuples, dicts; the
//                             JSON true / false / null Tandem's LFM2 template renders too) as JSON
// The formats are the ones the templates render for an assistant's tool calls in the history
// (chat_template.cpp), so a parsed call renders back as the model wrote it.
// Rules:
//   - the calls start at the first <tool_call>; the text before it, without its trailing
//     whitespace, is content; more calls may follow, whitespace between and after them (LFM2:
//     text after the calls is content too, as its template renders a turn's content after them);
//   - every call must be well formed, name one of the request's tools and have arguments its
//     schema types allow; otherwise — and when anything but whitespace follows the calls — there
//     are no calls and the whole answer is content: a broken call comes back as text, never as a
//     call.
// ToolCallSplitter releases the content as it streams, holding back only a possible <tool_call>
// (LFM2: <|tool_call_start|>) and the whitespace before it, and keeps the calls until the answer
// ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_template.h"

namespace tandem::text {

enum class ToolCallFormat : uint8_t {
  None,    // the family writes no calls Tandem parses (ChatML renders no tools)
  Xml,     // Qwen3.5
  Json,    // Qwen3, Granite-4.0
  Python,  // LFM2
};
ToolCallFormat tool_call_format(ChatTemplateFamily f);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, compact (OpenAI's function.arguments)
};

// An XML parameter's text as the JSON value its schema types say (a string for "string", a number
// for "integer" / "number", true / false (also Python's True / False) for "boolean", null (also
// None) for "null", parsed JSON for "object" / "array"); without a type, parsed JSON if it is JSON
// and the text otherwise. nullopt: the text is none of the types.
std::optional<Json> tool_call_value(const std::string& text, const Json* schema);

class ToolCallSplitter {
 public:
  // tools: the request's tools (OpenAI's [{"type": "function", "function": {"name",
  // "parameters"}}], or the bare function objects); must outlive the splitter.
  ToolCallSplitter(ToolCallFormat format, const Json& tools);
  // Feeds the next piece of the answer; appends the content that is settled.
  void push(std::string_view piece, std::string& content);
  // The answer ended: the calls (empty when there were none or one was broken; their text then
  // went to content).
  std::vector<ToolCall> finish(std::string& content);

 private:
  ToolCallFormat format_;
  const Json& tools_;
  bool in_calls_ = false;  // held_ is the blanks before the first <tool_call>, then the calls
  size_t calls_at_ = 0;    // where in held_ the first <tool_call> starts
  bool released_ = false;  // content came before the calls
  std::string held_;
};

struct ToolCallAnswer {
  std::string content;
  std::vector<ToolCall> calls;
};
// A whole answer, parsed as the streamed pieces would be.
ToolCallAnswer parse_tool_calls(std::string_view answer, ToolCallFormat format, const Json& tools);

}  // namespace tandem::text
