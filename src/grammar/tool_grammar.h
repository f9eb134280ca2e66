// Tool calls constrained (issue 45, item 2): a chat request's tools -> one GBNF grammar in the
// model family's call format, the format text/tool_calls.h parses, so that what the grammar lets
// the model write parses into tool_calls whose arguments fit the tools' parameter schemas, and so
// that the fixed text of a call (the tags, a function's name once it is the only one left, the
// parameter names) is forced and becomes free drafts under speculation:
//   XML (Qwen3.5)   <tool_call>\n<function=NAME>\n(<parameter=P>\nVALUE\n</parameter>\n)*</function>\n</tool_call>
//                   required parameters first (declaration order), then the optional ones, each
//                   at most once; a VALUE is the raw text for a schema whose type includes
//                   "string" (one of its literals for a string enum / const), JSON under the
//                   parameter's schema otherwise (json_schema.h), without whitespace
//   JSON (Qwen3, Granite-4.0)
//                   <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>, ARGS JSON
//                   under the function's parameters schema
//   Python (LFM2)   <|tool_call_start|>[NAME(K=V, ...), ...]<|tool_call_end|>, keyword arguments
//                   ordered as the XML parameters, each V JSON under its schema (JSON strings,
//                   numbers, lists, objects and true / false / null are literals the parser reads)
// Calls are separated by one "\n" (as the templates render several calls in a turn); LFM2's by
// ", " inside its one list.
//
// tool_choice "required" (or a named function): the answer is calls and nothing else (after the
// reasoning, when the prompt opened a <think> block or the model may open one). "auto": free text
// (anything but the text "<tool_call>"), then optionally calls from the first "<tool_call>" on,
// then the end: llama.cpp's lazy grammar with the trigger word "<tool_call>", written as one
// grammar (its free part is the regular language of texts without the trigger) so that the
// engine needs no lazy mode.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "grammar/json_schema.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "text/tool_calls.h"

namespace tandem::grammar {

enum class ToolReasoning : uint8_t {
  None,      // no think block (Granite, or thinking switched off in the prompt)
  Open,      // the prompt opened <think> (Qwen3.5): reasoning first, closed by </think>
  Optional,  // the model may open a <think> block itself (Qwen3)
};

struct ToolGrammarOptions {
  text::ToolCallFormat format = text::ToolCallFormat::Xml;  // not None
  bool required = false;    // "required" / a named function; false: "auto"
  std::string function;     // non-empty: calls of this function only (tool_choice naming it)
  bool parallel = true;     // parallel_tool_calls: one or more calls; false: exactly one (required) / at most one (auto)
  ToolReasoning reasoning = ToolReasoning::None;
  JsonWhitespace whitespace = JsonWhitespace::Flexible;  // inside the JSON format's arguments (XML values: compact)
  // Whether a tag ("<tool_call>", "</tool_call>", "<think>", "</think>") is one control or
  // user-defined token of the vocabulary: such tokens are only matched by token terminals
  // (grammar/vocab_index.h), so the grammar names the token instead of spelling its text.
  std::function<bool(std::string_view)> special_token;
};

// tools: OpenAI's [{"type": "function", "function": {"name", "parameters"}}] (or bare function
// objects), already validated (http/api/chat_validation.h). Throws GrammarError naming the tool
// ("tools[1].function.parameters/properties/x: ...") when a schema cannot be converted, or when
// options.function is not among the tools. Warnings (keywords not enforced) name the tool too.
SchemaGrammar tool_call_grammar(const text::Json& tools, const ToolGrammarOptions& options);

// ToolGrammarOptions::special_token for a vocabulary: the text is one control or user-defined
// token (the tokens grammar/vocab_index.h never matches by text). The tokenizer must outlive it.
std::function<bool(std::string_view)> special_token_test(const text::Tokenizer& tok);

// The rules of `gbnf` (a whole grammar, as json_schema_to_gbnf returns it) with every rule name
// prefixed, so that several grammars can be put into one; `root` becomes prefix + "root".
std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix);

}  // namespace tandem::grammar
