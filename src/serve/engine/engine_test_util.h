// Helpers for the engine's suites (logprobs, lifecycle): a greedy request with log-probabilities,
// submitted and waited for, whose answers the suites compare bit for bit across configurations.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "serve/engine/engine.h"

namespace tandem::serve::testing {

inline GenerationResult ask_greedy(Engine& e, const std::vector<int32_t>& prompt, std::vector<int64_t> user_starts,
                                   int64_t n_predict, int top_logprobs) {
  EngineRequest r;
  r.prompt = prompt;
  r.user_starts = std::move(user_starts);
  r.params.sampling.temperature = 0.0f;
  r.params.n_predict = n_predict;
  r.params.ignore_eos = true;
  r.params.logprobs = true;
  r.params.top_logprobs = top_logprobs;
  auto g = e.submit(std::move(r));
  EXPECT_TRUE(g->wait_done(std::chrono::seconds(120)));
  return g->result();
}

}  // namespace tandem::serve::testing
