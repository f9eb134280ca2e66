// The target's pick under a request's grammar (spec/constrained.md §6.3): the sampler sees only
// the tokens the grammar allows ("mask, then chain": the draw is from the distribution
// conditioned on being legal; llama.cpp instead samples first and resamples over the mask when
// the pick was illegal, which differs under top-k/p — docs/constrained.md). Greedy takes a fast
// path: the unmasked argmax when the grammar allows it (then it is also the masked argmax, ties
// to the lowest id either way), the masked argmax otherwise.
//
// The same picker serves plain decoding and every verified row of a speculative step, so a
// constrained answer is token for token the same with speculation on or off.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "serve/engine/token_logprobs.h"
#include "serve/spec/speculator.h"
#include "text/sampler.h"

namespace tandem::serve {

class GrammarPicker final : public TokenPicker {
 public:
  // matcher null: the sampler alone.
  GrammarPicker(text::Sampler& sampler, grammar::Matcher* matcher) : s_(sampler), m_(matcher) {}
  // Throws std::runtime_error if the grammar allows nothing (a live state always allows a token).
  int32_t pick(std::span<const float> logits) override;
  // Records the token in the sampler's history and moves the grammar past it.
  void accept(int32_t token) override;

  // Log-probabilities (serve/engine/token_logprobs.h): from now on every pick also records the picked
  // token's and the n_top best tokens' log-probabilities of the row it was picked from, in pick
  // order — which is the order the engine emits tokens in, speculative steps included.
  // n_vocab: the tokenizer's vocabulary (a model's output rows may be padded beyond it).
  void record_logprobs(int n_top, int64_t n_vocab) {
    record_ = true;
    n_top_ = n_top;
    n_vocab_ = n_vocab;
  }
  // The entry of the i-th pick, handed over (the picker needs it no more).
  TokenLogprob take_logprob(size_t i) { return std::move(logprobs_[i]); }
  const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }

  // Greedy picks where the grammar changed the argmax (spec §6.6 I2c: the intervention rate).
  int64_t interventions() const { return interventions_; }
  double grammar_ms() const { return grammar_ms_; }

 private:
  text::Sampler& s_;
  grammar::Matcher* m_;
  int32_t picked(std::span<const float> logits, int32_t t);
  int64_t interventions_ = 0;
  double grammar_ms_ = 0;
  bool record_ = false;
  int n_top_ = 0;
  int64_t n_vocab_ = 0;
  std::vector<TokenLogprob> logprobs_;
};

}  // namespace tandem::serve
