// The generation endpoints' request bodies -> the request object (serve/request/request.h). Field
// names follow OpenAI's chat completions and llama.cpp's /completion; every wrong type or
// out-of-range value is a 400 that names the field (serve/request/json_fields.h). The prompt is
// read, not tokenized: the route hands the request to serve::assemble_prompt
// (serve/request/prompt_assembly.h), the one assembly the dry run calls too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "http/api/json_text.h"
#include "serve/request/request.h"
#include "text/chat_template.h"
#include "text/reasoning.h"
#include "text/tokenizer.h"

namespace tandem::http {

struct ParseContext {
  const text::ChatTemplate* tmpl = nullptr;  // the roles it renders besides the standard ones, its tool-call format
  const text::Tokenizer* tok = nullptr;      // which tags are special tokens (the tools' grammar)
  int64_t n_ctx = 0;     // per slot
  int n_parallel = 1;
  std::vector<std::string> model_names;  // the served names: the first answers a request without "model" (any name is accepted)
  grammar::JsonWhitespace json_whitespace = grammar::JsonWhitespace::Flexible;  // schemas' default
  text::ReasoningFormat reasoning_format = text::ReasoningFormat::Auto;  // chat's default (--reasoning-format)
};

struct ParsedRequest {
  serve::Request request;      // the prompt, sampling and Tandem's options
  bool stream = false;
  bool include_usage = false;  // chat: stream_options.include_usage
  std::string model;           // as given (echoed back), or the first served name
};

// POST /completion: prompt (string, token ids, or a mix; or llama.cpp's multimodal object
// {prompt_string, multimodal_data}), image_min_tokens / image_max_tokens, n_predict, sampling, stop, stream,
// id_slot, cache_prompt, ignore_eos, timeout_ms, grammar, json_schema, speculative /
// speculative.n_max.
ParsedRequest parse_completion_request(const Json& body, const ParseContext& ctx);
// POST /v1/chat/completions: model, messages (rendered with the model's chat template; user
// messages may carry image_url parts), image_min_tokens / image_max_tokens, max_tokens /
// max_completion_tokens, sampling, stop, stream, stream_options, n (must be 1), tools,
// chat_template_kwargs.enable_thinking, response_format, reasoning_format, plus the llama.cpp
// extras (top_k, min_p, id_slot, grammar, json_schema, speculative.n_max, ...).
ParsedRequest parse_chat_request(const Json& body, const ParseContext& ctx);

// The pieces of a JSON prompt: a string, an array of token ids, or an array mixing both. `what`
// names the field in errors (ids are checked against the vocabulary when tokenized).
std::vector<serve::PromptPiece> prompt_pieces(const Json& v, const char* what);
// Their token ids (serve::prompt_tokens): add_special puts BOS first when the vocabulary adds one.
std::vector<int32_t> tokens_of(const Json& v, const text::Tokenizer& tok, const char* what, bool add_special = false);

}  // namespace tandem::http
