// Log-probabilities of picked tokens (issue 27, item 5): what OpenAI's `logprobs` /
// `top_logprobs` and llama.cpp's `n_probs` report. As llama.cpp does by default
// (post_sampling_probs off), they are the log-softmax of the model's raw logits over the whole
// vocabulary — before temperature, penalties, top-k/p and a grammar's mask — for the row the token
// was picked from, so they do not depend on the sampler settings and are the same numbers with
// speculation on or off (a verified row equals a decode step's logits).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tandem::serve {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // the n most probable tokens, most probable first (ties: lower id)
};

// The picked token's log-probability and the n_top most probable tokens of one row of logits.
TokenLogprob token_logprob(std::span<const float> logits, int32_t picked, int n_top);

}  // namespace tandem::serve
