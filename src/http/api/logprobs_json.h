// Log-probabilities in responses (serve/engine/token_logprobs.h for what they are):
//   * chat (OpenAI): choices[0].logprobs = {"content": [{"token", "logprob", "bytes",
//     "top_logprobs": [{"token", "logprob", "bytes"}]}]}, in whole answers and in each streamed chunk
//     for the tokens it carries;
//   * /completion (llama.cpp's n_probs): "completion_probabilities": [{"id", "token", "bytes",
//     "logprob", "top_logprobs": [{"id", "token", "bytes", "logprob"}]}].
// "token" is the token's text (special tokens rendered), "bytes" its UTF-8 bytes.
#pragma once

#include <span>

#include "http/api/json_text.h"
#include "serve/engine/token_logprobs.h"
#include "text/tokenizer.h"

namespace tandem::http {

Json chat_logprobs_json(const text::Tokenizer& tok, std::span<const serve::TokenLogprob> lps);
Json completion_probabilities_json(const text::Tokenizer& tok, std::span<const serve::TokenLogprob> lps);

}  // namespace tandem::http
