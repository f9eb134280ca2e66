// The generation endpoints' request bodies -> an engine request. Field names follow OpenAI's chat
// completions and llama.cpp's /completion; every wrong type or out-of-range value is a 400 that
// names the field (json_fields.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "http/api/grammar_request.h"
#include "http/api/json_text.h"
#include "serve/engine/engine.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::http {

struct ParseContext {
  const text::Tokenizer* tok = nullptr;
  const text::ChatTemplate* tmpl = nullptr;
  int64_t n_ctx = 0;     // per slot
  int n_parallel = 1;
  std::vector<std::string> model_names;  // the served names: the first answers a request without "model" (any name is accepted)
  grammar::JsonWhitespace json_whitespace = grammar::JsonWhitespace::Flexible;  // schemas' default
  // Images (http/image_request.h): the engine lays them out (null: requests with images are refused),
  // and the marker that stands for an image in prompt text.
  const serve::Engine* engine = nullptr;
  std::string media_marker = "<__media__>";
  // The longest text one token stands for (bytes): a prompt of B bytes is at least
  // B / (3 * max_token_bytes) tokens (NFC composes at most 3 bytes into 1), so one far too long
  // for the context is refused from its size, before it is tokenized. 0: no such check.
  size_t max_token_bytes = 0;
};

struct ParsedRequest {
  serve::EngineRequest engine;
  bool stream = false;
  bool include_usage = false;  // chat: stream_options.include_usage
  std::string model;           // as given (echoed back), or the first served name
  GrammarRequest grammar;      // GBNF to compile (empty: unconstrained), http/api/grammar_request.h
};

// POST /completion: prompt (string, token ids, or a mix; or llama.cpp's multimodal object
// {prompt_string, multimodal_data}), image_min_tokens / image_max_tokens, n_predict, sampling, stop, stream,
// id_slot, cache_prompt, ignore_eos, timeout_ms, grammar, json_schema.
ParsedRequest parse_completion_request(const Json& body, const ParseContext& ctx);
// POST /v1/chat/completions: model, messages (rendered with the model's chat template; user
// messages may carry image_url parts), image_min_tokens / image_max_tokens, max_tokens /
// max_completion_tokens, sampling, stop, stream, stream_options, n (must be 1), tools,
// chat_template_kwargs.enable_thinking, response_format, plus the llama.cpp extras (top_k, min_p,
// id_slot, grammar, json_schema, ...).
ParsedRequest parse_chat_request(const Json& body, const ParseContext& ctx);

// Positions where the template's user delimiter begins in a token sequence (raw prompts: the stock
// policy's last-user-message cut needs them as the chat path gets them from the template).
// tmpl null: the ChatML delimiter <|im_start|>user. See text::find_user_starts.
std::vector<int64_t> find_user_starts(const text::Tokenizer& tok, std::span<const int32_t> tokens,
                                      const text::ChatTemplate* tmpl = nullptr);

// Token ids of a JSON value: a string (tokenized, control tokens recognized), an array of ids, or
// an array mixing both. `what` names the field in errors.
// add_special: BOS first when the vocabulary adds one (text::EncodeOptions::add_special; the
// completion prompt, as llama.cpp's server).
std::vector<int32_t> tokens_of(const Json& v, const text::Tokenizer& tok, const char* what, bool add_special = false);

}  // namespace tandem::http
