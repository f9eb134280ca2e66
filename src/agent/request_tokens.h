// A trace request as the server sees it: the chat-completions body rendered with the model's chat
// template and tokenized (special tokens on), plus where each user message starts. This is what
// tandem-server does with a /v1/chat/completions body, so the simulator predicts from the very
// token streams the server prefills.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/prompt_builder.h"
#include "agent/trace.h"
#include "serve/recorded_request.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::agent {

struct RequestTokens {
  std::vector<int32_t> ids;
  std::vector<int64_t> user_starts;  // first token of every user message (serve::Prompt)
};

// Reads "messages", "tools", "chat_template_kwargs": {"enable_thinking": bool} and
// "enable_thinking" (llama.cpp's spellings); add_generation_prompt is on. Throws
// text::ChatTemplateError for a body the template cannot render.
RequestTokens tokenize_request(const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                               const nlohmann::ordered_json& body);

// The request's output limit: "max_tokens", else "n_predict", else "max_completion_tokens";
// -1 when none is given.
int64_t max_output_tokens(const nlohmann::ordered_json& body);

// The generated tokens a server would sample for the expected action: the action's compact JSON,
// then the end-of-turn token, capped at the request's output limit. Empty when the record has no
// expected action.
std::vector<int32_t> expected_output(const text::Tokenizer& tok, const TraceRecord& rec);

// The request as the dry run replays it. `sampled` = every token the server sampled (the last one
// is not fed back through decode, as in the engine).
serve::RecordedRequest recorded_request(const RequestTokens& t, const std::vector<int32_t>& sampled);
// The same from one line of a server's --log-requests file: "output", plus what a speculating
// server logs — "fed_past_output" (tokens fed past the output, serve::GenerationResult) and the
// per-step draft counts timings.step_drafted / timings.step_accepted. Throws
// std::invalid_argument naming the field when one is malformed.
serve::RecordedRequest recorded_request_from_log(const RequestTokens& t, const nlohmann::ordered_json& log_record);

// Tokens of each named part of a built prompt (prompt_builder.h sections) as the server tokenizes
// the whole rendered request; "template" = the chat template's own tokens around the message.
struct SectionTokenCounts {
  std::map<std::string, int64_t> by_section;
  int64_t total = 0;
};
SectionTokenCounts count_section_tokens(const text::Tokenizer& tok, const text::ChatTemplate& tmpl,
                                        const nlohmann::ordered_json& body, const std::string& user_text,
                                        const std::vector<PromptSection>& sections);

}  // namespace tandem::agent
