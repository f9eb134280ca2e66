// Picks the next token from a row of logits.
//
// Pipeline (llama.cpp's default order): repetition / presence / frequency penalties over the last
// `penalty_last_n` tokens -> top-k -> top-p -> min-p -> temperature -> draw with a seeded RNG.
// temperature <= 0 is greedy (argmax after penalties). The RNG is a fixed algorithm (splitmix64),
// so a seed gives the same tokens on every machine and standard library.
//
// All buffers are sized once (the first call for a vocabulary size) and reused: sampling a token
// performs no heap allocation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem::text {

// The index std::max_element gives over v: the first position of the largest value, ties to the
// lowest index; NaNs never win (a NaN at index 0 is returned, as std::max_element does); 0 for an
// empty v. A greedy pick over a whole vocabulary row without copying it: a max in independent
// lanes, then the first position equal to it.
int64_t argmax_first(std::span<const float> v);

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy
  int32_t top_k = 40;        // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  float repeat_penalty = 1.0f;     // 1: off; > 1 divides positive logits / multiplies negative ones
  float presence_penalty = 0.0f;   // subtracted once if the token occurred
  float frequency_penalty = 0.0f;  // subtracted per occurrence
  int32_t penalty_last_n = 64;     // window of recent tokens the penalties look at (0: none)
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerParams p = {});
  const SamplerParams& params() const { return p_; }

  // Samples from logits (n_vocab floats). Does not modify logits. Does not record the token: call
  // accept() with the token that is actually appended (sampled or forced).
  int32_t sample(std::span<const float> logits);
  // The same under a grammar's mask (bit i of `allowed`: token i may be drawn; empty: all):
  // "mask, then chain" — the penalties, top-k/p, min-p and temperature see only the allowed
  // tokens, so the draw is from the distribution conditioned on being legal. -1 when nothing
  // is allowed.
  int32_t sample(std::span<const float> logits, std::span<const uint64_t> allowed);
  bool greedy() const { return p_.temperature <= 0.0f; }
  // Adds a token to the penalty history (prompt tokens too, if they should be penalized).
  void accept(int32_t token);
  // Clears history and reseeds.
  void reset();

 private:
  struct Cand {
    float logit;
    int32_t id;
  };
  double uniform();  // [0, 1)

  SamplerParams p_;
  uint64_t rng_state_;
  std::vector<int32_t> history_;  // ring buffer of the last penalty_last_n tokens
  size_t history_pos_ = 0;
  size_t history_len_ = 0;
  std::vector<Cand> cands_;
  std::vector<int32_t> recent_;   // scratch: sorted copy of history for counting
  std::vector<float> probs_;
};

}  // namespace tandem::text
