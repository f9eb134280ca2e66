// The replay model against the real engine: an agent trace, tokenized as the server does,
// served by a Slot over ModelBackend on the tiny model (what tandem-server's engine runs, greedy
// decoding up to each request's max_tokens), then replayed by tandem-sim's simulate() with the
// generated tokens. Every count (N - R, passes, checkpoints, bytes, prompt cache) must be equal,
// request by request, for each policy with and without consolidation.
#include "agent/sim.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "model/architectures.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "serve/backend/model_backend.h"
#include "serve/engine/engine.h"
#include "serve/meter/flop_model.h"
#include "serve/slot/prompt_cache.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::agent {
namespace {

TEST(ServeFlags, ParsedAsTheServerDoes) {
  const ServeSettings d;
  EXPECT_EQ(d.policy.kind, serve::PolicyKind::Divergence);
  EXPECT_TRUE(d.slot.batch.consolidate);
  EXPECT_EQ(d.slot.ctx_checkpoints, 8);
  EXPECT_EQ(d.cache_ram_mib, 512u);
  const ServeSettings s = parse_config(
      "lean: --checkpoint-policy marconi --consolidate-batches off --min-gap 16 --ctx-checkpoints 4 --cache-ram 0 "
      "-c 8192 -b 1024 -ub 256 --port 0 -t 4 --log-requests 'a b.jsonl'");
  EXPECT_EQ(s.name, "lean");
  EXPECT_EQ(s.policy.kind, serve::PolicyKind::Marconi);
  EXPECT_FALSE(s.slot.batch.consolidate);
  EXPECT_EQ(s.policy.divergence.min_gap, 16);
  EXPECT_EQ(s.slot.ctx_checkpoints, 4);
  EXPECT_EQ(s.cache_ram_mib, 0u);
  EXPECT_EQ(s.n_ctx, 8192);
  EXPECT_EQ(s.slot.batch.n_batch, 1024);
  EXPECT_EQ(s.slot.batch.n_ubatch, 256);
  EXPECT_EQ(parse_config("--checkpoint-policy stock").name, "--checkpoint-policy stock");
  EXPECT_THROW(parse_config("x: --frobnicate 3"), std::invalid_argument);
  EXPECT_THROW(parse_config("x: --consolidate-batches maybe"), std::invalid_argument);
  EXPECT_EQ(parse_config("x: --parallel 4").n_parallel, 4);
  EXPECT_THROW(parse_config("x: --min-gap"), std::invalid_argument);
  EXPECT_THROW(parse_config("x: -b 256 -ub 512"), std::invalid_argument);
}

// The speculation flags land in the settings (simulate() runs a speculating dry run from them);
// the server's flags that change no count are skipped, with their value or without one.
TEST(ServeFlags, SpeculationFlagsApplyAndTheOthersAreSkipped) {
  const ServeSettings d;
  EXPECT_FALSE(d.speculation.enabled);
  const ServeSettings s = parse_config(
      "spec: --spec on --draft-max 2 --draft-min 1 --draft-p-min 0.5 --spec-rollback copy --spec-column-shared off "
      "--queue 3 --timeout-ms 50 --cpu-dma-latency --http-threads 2 --idle-release-ms 0 --cpu-path scalar --api-key k "
      "-a qwen --host 0.0.0.0");
  EXPECT_TRUE(s.speculation.enabled);
  EXPECT_EQ(s.speculation.draft_max, 2);
  EXPECT_EQ(s.speculation.draft_min, 1);
  EXPECT_FLOAT_EQ(s.speculation.p_min, 0.5f);
  EXPECT_FALSE(s.speculation.replay_rollback);
  EXPECT_FALSE(s.speculation.column_shared_verify);
  EXPECT_TRUE(s.speculation.trimmed_head);
  EXPECT_EQ(s.queue_max, d.queue_max);  // skipped: no count depends on it
  EXPECT_EQ(s.timeout_ms, d.timeout_ms);
  EXPECT_EQ(describe(s), "divergence min_gap=8 consolidate ckpt=8 cache=512MiB spec k=2 draft_min=1 p_min=0.5 "
                         "spec-column-shared=off spec-rollback=copy");
  EXPECT_THROW(parse_config("x: --draft-min 4 --draft-max 2"), std::invalid_argument);
  EXPECT_THROW(parse_config("x: --draft-max 0"), std::invalid_argument);
  EXPECT_THROW(parse_config("x: --spec maybe"), std::invalid_argument);
  EXPECT_THROW(parse_config("x: --queue"), std::invalid_argument);
}

TEST(CostModel, FitRecoversCoefficients) {
  std::vector<CostSample> s;
  for (double t : {64.0, 128.0, 256.0, 512.0})
    for (double p : {1.0, 2.0, 4.0})
      for (double c : {0.0, 2.0}) s.push_back({t, p, c, 1.3 * t + 86 * p + 5 * c + ((int(t + p) % 3) - 1) * 0.01});
  const CostModel m = fit_cost_model(s);
  EXPECT_NEAR(m.ms_per_token, 1.3, 1e-3);
  EXPECT_NEAR(m.ms_per_pass, 86, 0.05);
  EXPECT_NEAR(m.ms_per_copy, 5, 0.05);
  const std::vector<CostSample> degenerate = {{10, 1, 0, 5}, {20, 2, 0, 10}};
  EXPECT_THROW(fit_cost_model(degenerate), std::invalid_argument);
  const CostModel p = parse_cost_model("1.3,86,5,40");
  EXPECT_DOUBLE_EQ(p.ms_per_output_token, 40);
  EXPECT_THROW(parse_cost_model("1.3"), std::invalid_argument);
}

int32_t argmax(std::span<const float> v) { return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

// A shorter trace of the same structure (6 single screens, 2 episodes of 8 steps: 22 requests):
// the full default trace is compared against tandem-server's own request log in
// sim_server_test.cpp; this one checks the engine path directly. Every policy, with and without
// consolidation, also answers with the same tokens (checkpoints and restores change no bit).
void expect_replay_model_equals_engine(HybridModel& model, int single_screens, int episodes) {
  const auto tok = text::Tokenizer::from_gguf(model.file());
  const auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template());
  GenOptions go;
  go.single_screens = single_screens;
  go.episodes = episodes;
  const auto gen = generate_trace(go);
  std::vector<RequestTokens> reqs;
  for (const auto& g : gen) reqs.push_back(tokenize_request(*tok, tmpl, g.record.body));
  // One user message per request; LFM2's template gives the stock policy no user spans.
  const size_t user_spans = tmpl.user_delimiter().empty() ? 0u : 1u;
  for (const auto& r : reqs) ASSERT_EQ(r.user_starts.size(), user_spans);

  std::vector<std::vector<int32_t>> first_answers;
  for (const char* policy : {"stock", "marconi", "divergence"})
    for (bool consolidate : {false, true}) {
      ServeSettings st;
      st.policy.kind = serve::parse_policy_kind(policy);
      st.slot.batch.consolidate = consolidate;
      SCOPED_TRACE(describe(st));
      serve::PolicyConfig pc = st.policy;
      pc.marconi.flops = serve::FlopModel::for_model(model.shape());
      serve::Slot slot(std::make_unique<serve::ModelBackend>(model, st.n_ctx), serve::make_policy(pc), st.slot);
      serve::PromptCache cache(serve::prompt_cache_options(st));
      slot.set_prompt_cache(&cache);
      std::vector<serve::RequestStats> real;
      std::vector<serve::RecordedRequest> recorded;
      std::vector<std::vector<int32_t>> answers;
      for (size_t i = 0; i < reqs.size(); ++i) {
        const serve::PrefillReport rep = slot.prefill(serve::Prompt{reqs[i].ids, reqs[i].user_starts});
        // Greedy, as the engine: a sampled token is fed back unless it ends the request.
        const int64_t max_out = max_output_tokens(gen[i].record.body);
        std::vector<int32_t> sampled{argmax(rep.logits)};
        while (!tok->vocab().is_eog(sampled.back()) && static_cast<int64_t>(sampled.size()) < max_out)
          sampled.push_back(argmax(slot.decode(sampled.back())));
        real.push_back(slot.end_request());
        recorded.push_back(recorded_request(reqs[i], sampled));
        answers.push_back(sampled);
      }
      if (first_answers.empty()) first_answers = answers;
      EXPECT_EQ(answers, first_answers) << "the answers differ from the first configuration's";
      const auto sim = simulate(recorded, st, model.shape());
      ASSERT_EQ(sim.size(), real.size());
      int64_t nr = 0;
      for (size_t i = 0; i < real.size(); ++i) {
        EXPECT_TRUE(sim[i].same_counts(real[i]))
            << "request " << i + 1 << ": engine N-R " << real[i].new_tokens << " passes " << real[i].passes
            << " | sim N-R " << sim[i].new_tokens << " passes " << sim[i].passes << "\nengine "
            << nlohmann::json(real[i]).dump() << "\nsim    " << nlohmann::json(sim[i]).dump();
        nr += real[i].new_tokens;
      }
      std::printf("%-14s %-40s N-R %lld over %zu requests\n", model.architecture().c_str(), describe(st).c_str(),
                  static_cast<long long>(nr), real.size());
    }
}

TEST(ReplayModel, EqualsTheEngineForEveryPolicy) {
  const auto model = Qwen35Model::load(ensure_tiny_model("F32"), 2);
  expect_replay_model_equals_engine(*model, 6, 2);
}

// The same on LFM2 (short-conv state) and Granite-4.0-H (Mamba2 state): the policies, the prompt
// cache and the replay model work on "a hybrid model", not on qwen35's.
TEST(ReplayModel, EqualsTheEngineOnLfm2AndGraniteHybrid) {
  for (const char* preset : {"lfm2-tiny", "granite-tiny"}) {
    SCOPED_TRACE(preset);
    LoadOptions lo;
    lo.n_threads = 2;
    const auto model = load_model(ensure_hybrid_model(preset, "F32"), lo);
    expect_replay_model_equals_engine(*model, 3, 1);
  }
}

TEST(CostModel, SpeculationTermsPriceDraftsAndVerifyPasses) {
  CostModel c;
  c.ms_per_output_token = 10;
  EXPECT_FALSE(c.has_spec());
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 3, 0.9), 140);  // no spec costs: plain decoding, 14 steps
  c.ms_per_draft = 1;
  c.ms_per_verify = {12, 13, 14};
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 0, 0.9), 140);
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 3, 1.0), 14.0 / 4 * (3 + 14));  // every draft accepted: 4 tokens a step
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 3, 0.0), 14.0 * (3 + 14));      // none: one token a step, dearer
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 2, 0.5), 14.0 / 1.75 * (2 + 13));
  EXPECT_DOUBLE_EQ(c.expected_decode_ms(15, 9, 1.0), c.expected_decode_ms(15, 3, 1.0));  // k capped by the calibration
  // A logged request: steps of 3, 0 and 2 drafts.
  serve::RequestStats s;
  s.tokens_generated = 7;
  s.step_drafted = {3, 0, 2};
  EXPECT_DOUBLE_EQ(c.decode_ms(s), (3 + 14) + 10 + (2 + 13));
  s.step_drafted.clear();
  EXPECT_DOUBLE_EQ(c.decode_ms(s), 60);  // no steps logged: plain decoding after the first token
  // The spec terms survive the JSON round trip.
  const nlohmann::json j = c;
  const CostModel back = j.get<CostModel>();
  EXPECT_EQ(back.ms_per_verify, c.ms_per_verify);
  EXPECT_DOUBLE_EQ(back.ms_per_draft, 1);
}

}  // namespace
}  // namespace tandem::agent

