// Log-probabilities (issue 27, item 5; serve/engine/token_logprobs.h) on the tiny model:
//  * token_logprob against a direct float64 log-softmax, ties to the lower id, n larger than the row;
//  * the paper's fidelity check on an agent-like episode: every output token's top-5 is the same
//    as a fresh engine's under every checkpoint policy, across restores and idle-release cycles (logprobs within float rounding: the prompt's last pass is chunked
//    elsewhere after a restore), and bit for bit the same with speculation on and off.
#include "serve/engine/token_logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_model.h"
#include "model/test_support.h"
#include "serve/engine/engine.h"
#include "serve/engine/engine_test_util.h"
#include "text/tokenizer.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;

TEST(TokenLogprob, MatchesAFloat64LogSoftmax) {
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 3.25f, 0.0f, -50.0f};
  double z = 0;
  for (float x : v) z += std::exp(static_cast<double>(x));
  const TokenLogprob r = token_logprob(v, 4, 3);
  EXPECT_EQ(r.token, 4);
  EXPECT_NEAR(r.logprob, 0.0 - std::log(z), 1e-6);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].first, 2);  // a tie: the lower id first
  EXPECT_EQ(r.top[1].first, 3);
  EXPECT_EQ(r.top[2].first, 0);
  EXPECT_NEAR(r.top[2].second, 1.5 - std::log(z), 1e-6);
  EXPECT_EQ(token_logprob(v, 0, 10).top.size(), v.size());
  EXPECT_TRUE(token_logprob(v, 0, 0).top.empty());
}

constexpr const char* kAgentSystem = "<|im_start|>system\nYou are a phone agent. Answer with one JSON action.<|im_end|>\n";

// Rules, a task, a growing history, a new screen each step; then a repeat of step 2.
std::vector<std::vector<int32_t>> episode(const text::Tokenizer& tok) {
  std::vector<std::vector<int32_t>> out;
  std::string hist;
  for (int k = 0; k < 4; ++k) {
    out.push_back(tok.encode(std::string(kAgentSystem) + "<|im_start|>user\nTask: open settings. History:" + hist +
                             " Screen: [" + std::to_string(k) + "] Wi-Fi [9] Display<|im_end|>\n<|im_start|>assistant\n"));
    hist += " tap " + std::to_string(k);
  }
  out.push_back(out[1]);
  return out;
}

GenerationResult ask_logged(Engine& e, const std::vector<int32_t>& prompt) {
  // The user message starts after the system message (the stock policy's checkpoint).
  return testing::ask_greedy(e, prompt, {static_cast<int64_t>(e.tokenizer().encode(kAgentSystem).size())}, 5, 5);
}

TEST(Logprobs, TheSameUnderSpeculationPoliciesRestoresAndReleaseCycles) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  const auto prompts = episode(*t.tok);
  // The reference: a fresh engine for every request (full prefill, no speculation).
  std::vector<GenerationResult> ref;
  for (const auto& p : prompts) {
    EngineConfig c;
    c.n_ctx = 512;
    Engine fresh(*t.model, *t.tok, c);
    ref.push_back(ask_logged(fresh, p));
    ASSERT_EQ(ref.back().logprobs.size(), ref.back().output.size());
    for (size_t i = 0; i < ref.back().output.size(); ++i) {
      const TokenLogprob& lp = ref.back().logprobs[i];
      EXPECT_EQ(lp.token, ref.back().output[i]);
      ASSERT_EQ(lp.top.size(), 5u);
      EXPECT_EQ(lp.top[0].first, lp.token);  // greedy: the pick is the most probable token
      EXPECT_LE(lp.logprob, 0.0f);
    }
  }
  // Speculation on and off: the same bits (a verified row is a decode step's row). Across
  // policies, restores and cache loads the prompt's last pass starts elsewhere, so the delta rule
  // runs in other chunks: the same tokens and top-5, logprobs within float rounding.
  std::vector<GenerationResult> plain;
  for (PolicyKind policy : {PolicyKind::Stock, PolicyKind::Marconi, PolicyKind::Divergence})
    for (bool spec : {false, true}) {
      EngineConfig c;
      c.n_ctx = 512;
      c.policy.kind = policy;
      c.slot.ctx_checkpoints = 4;
      c.cache_ram_mib = 16;
      c.speculation.enabled = spec;
      Engine e(*t.model, *t.tok, c);
      bool restored = false;
      for (size_t k = 0; k < prompts.size(); ++k) {
        const GenerationResult r = ask_logged(e, prompts[k]);
        restored = restored || r.stats.restore_pos > 0;
        const std::string where = std::string(to_string(policy)) + (spec ? " +spec" : "") + ", request " + std::to_string(k + 1);
        ASSERT_EQ(r.output, ref[k].output) << where;
        ASSERT_EQ(r.logprobs.size(), ref[k].logprobs.size()) << where;
        for (size_t i = 0; i < r.logprobs.size(); ++i) {
          const TokenLogprob &a = r.logprobs[i], &b = ref[k].logprobs[i];
          EXPECT_NEAR(a.logprob, b.logprob, 1e-4) << where << ", token " << i;
          ASSERT_EQ(a.top.size(), b.top.size());
          for (size_t j = 0; j < a.top.size(); ++j) {
            EXPECT_EQ(a.top[j].first, b.top[j].first) << where << ", token " << i << ", rank " << j;
            EXPECT_NEAR(a.top[j].second, b.top[j].second, 1e-4) << where << ", token " << i << ", rank " << j;
          }
          if (spec) {  // bit for bit against the same policy without speculation
            const TokenLogprob& c = plain[k].logprobs[i];
            EXPECT_EQ(a.logprob, c.logprob) << where << ", token " << i;
            EXPECT_EQ(a.top, c.top) << where << ", token " << i;
          }
        }
        if (!spec) {
          if (plain.size() <= k) plain.resize(k + 1);
          plain[k] = r;
        }
        t.model->governor().release_now();  // an idle-release cycle between steps
      }
      EXPECT_TRUE(restored) << to_string(policy) << ": the episode must exercise a restore";
    }
}

TEST(Logprobs, OffByDefaultAndBounded) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  EngineConfig c;
  c.n_ctx = 256;
  Engine e(*t.model, *t.tok, c);
  EngineRequest r;
  r.prompt = t.tok->encode("hello");
  r.params.n_predict = 2;
  auto g = e.submit(r);
  ASSERT_TRUE(g->wait_done(60s));
  EXPECT_TRUE(g->result().logprobs.empty());
  r.params.logprobs = true;
  r.params.top_logprobs = kMaxTopLogprobs + 1;
  EXPECT_THROW(e.submit(r), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::serve
