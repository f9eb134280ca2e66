// The slot on the real engine (tiny generated model): whatever the policy, consolidation,
// prompt cache and restore path, greedy outputs equal those of a plain full prefill, and the
// dry-run replay of the same token streams reproduces every count of the real run.
#include "serve/slot/slot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "serve/backend/dry_run.h"
#include "serve/backend/model_backend.h"
#include "serve/policy/policy_factory.h"
#include "text/sampler.h"

namespace tandem::serve {
namespace {

constexpr int64_t kCtx = 1024;
constexpr int kOut = 5;  // greedy tokens per request (the last is not fed back)

struct Req {
  std::vector<int32_t> prompt;
  std::vector<int64_t> users;
};

using text::argmax_first;

// n ids drawn uniformly from [0, n_vocab) by rng: the episodes' random segments.
std::vector<int32_t> random_ids(std::mt19937& rng, int n, int32_t n_vocab) {
  std::uniform_int_distribution<int32_t> d(0, n_vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// kOut greedy tokens after a prefill whose last logits are `first` (the last is not fed back).
std::vector<int32_t> greedy_output(Slot& slot, std::span<const float> first) {
  std::vector<int32_t> out;
  int32_t t = argmax_first(first);
  for (int k = 0; k < kOut; ++k) {
    out.push_back(t);
    if (k + 1 == kOut) break;
    t = argmax_first(slot.decode(t));
  }
  return out;
}

class SlotOnTinyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Qwen35Model::load(ensure_tiny_model("F32")).release(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  // Agent-like requests: rules with a user message at 8, a task, a sliding window of three
  // history entries, a new screen each step; then a new task, and a repeated prompt.
  static std::vector<Req> episode() {
    const int32_t n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
    std::mt19937 rng(7);
    auto rnd = [&](int n) { return random_ids(rng, n, n_vocab); };
    const auto rules = rnd(40), task = rnd(10), task2 = rnd(12);
    std::vector<std::vector<int32_t>> hist;
    for (int i = 0; i < 6; ++i) hist.push_back(rnd(6 + i));
    std::vector<Req> reqs;
    auto add = [&](const std::vector<int32_t>& tk, int k) {
      Req r;
      r.prompt = rules;
      r.prompt.insert(r.prompt.end(), tk.begin(), tk.end());
      for (int i = std::max(0, k - 3); i < k; ++i) r.prompt.insert(r.prompt.end(), hist[i].begin(), hist[i].end());
      const auto screen = rnd(30 + 3 * k);
      r.prompt.insert(r.prompt.end(), screen.begin(), screen.end());
      r.users = {8};
      reqs.push_back(std::move(r));
    };
    for (int k = 0; k < 6; ++k) add(task, k);
    add(task2, 0);
    add(task2, 1);
    reqs.push_back(reqs.back());  // identical prompt: L = N, one token still runs
    // An unrelated prompt, then back to the second task: the slot goes through the prompt cache.
    reqs.push_back(Req{rnd(70), {0}});
    Req back;
    back.prompt.assign(reqs[7].prompt.begin(), reqs[7].prompt.begin() + 60);
    const auto screen = rnd(25);
    back.prompt.insert(back.prompt.end(), screen.begin(), screen.end());
    back.users = {8};
    reqs.push_back(std::move(back));
    return reqs;
  }

  // Greedy outputs (kOut tokens) and first-token logits with no reuse at all.
  static void reference(const Req& r, std::vector<int32_t>& out, std::vector<float>& first) {
    auto st = model_->new_sequence(kCtx);
    ForwardOptions opt;
    ForwardOutput fo;
    model_->forward(*st, r.prompt, opt, fo);
    first = fo.logits;
    out.clear();
    int32_t t = argmax_first(fo.logits);
    for (int i = 0; i < kOut; ++i) {
      out.push_back(t);
      if (i + 1 == kOut) break;
      model_->forward(*st, std::span<const int32_t>(&t, 1), opt, fo);
      t = argmax_first(fo.logits);
    }
  }

  static Qwen35Model* model_;
};
Qwen35Model* SlotOnTinyModel::model_ = nullptr;

TEST_F(SlotOnTinyModel, GreedyOutputsIndependentOfPolicyConsolidationAndCache) {
  const std::vector<Req> reqs = episode();
  std::vector<std::vector<int32_t>> ref_out(reqs.size());
  std::vector<std::vector<float>> ref_first(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) reference(reqs[i], ref_out[i], ref_first[i]);

  SlotConfig cfg;
  cfg.batch = BatchConfig{32, 8, false};  // tails at 12 and 4 (8 consolidated): several passes per prompt
  cfg.ctx_checkpoints = 3;                // small: evictions happen
  for (PolicyKind kind : {PolicyKind::Stock, PolicyKind::Marconi, PolicyKind::Divergence})
    for (bool consolidate : {false, true})
      for (bool with_cache : {false, true}) {
        SCOPED_TRACE(std::string(to_string(kind)) + (consolidate ? " consolidated" : "") +
                     (with_cache ? " +cache" : ""));
        PolicyConfig pc;
        pc.kind = kind;
        pc.divergence.min_gap = 4;
        SlotConfig c = cfg;
        c.batch.consolidate = consolidate;
        PromptCache cache, dry_cache;
        Slot slot(std::make_unique<ModelBackend>(*model_, kCtx), make_policy(pc), c);
        if (with_cache) slot.set_prompt_cache(&cache);

        std::vector<RequestStats> real;
        std::vector<RecordedRequest> recorded;
        int64_t restored = 0, created = 0, loaded = 0;
        for (size_t i = 0; i < reqs.size(); ++i) {
          const PrefillReport rep = slot.prefill(Prompt{reqs[i].prompt, reqs[i].users});
          ASSERT_EQ(rep.logits.size(), ref_first[i].size());
          double diff = 0, mag = 0;
          for (size_t v = 0; v < rep.logits.size(); ++v) {
            diff = std::max(diff, std::fabs(double(rep.logits[v]) - ref_first[i][v]));
            mag = std::max(mag, std::fabs(double(ref_first[i][v])));
          }
          EXPECT_LE(diff, 1e-3 * mag) << "request " << i;
          const std::vector<int32_t> out = greedy_output(slot, rep.logits);
          EXPECT_EQ(out, ref_out[i]) << "request " << i;
          real.push_back(slot.end_request());
          restored += real.back().checkpoints_restored;
          created += real.back().checkpoints_created;
          loaded += real.back().prompt_cache_loaded ? 1 : 0;
          RecordedRequest rr;
          rr.prompt = reqs[i].prompt;
          rr.user_starts = reqs[i].users;
          rr.output.assign(out.begin(), out.end() - 1);
          recorded.push_back(std::move(rr));
        }
        EXPECT_GT(restored, 0);
        EXPECT_GT(created, 0);
        EXPECT_EQ(loaded > 0, with_cache);

        // The simulator's backend, same policy and planner objects: the same counts.
        auto dry = make_dry_run_slot(make_policy(pc), c, NullBackend::for_model(model_->shape(), kCtx));
        if (with_cache) dry->set_prompt_cache(&dry_cache);
        const std::vector<RequestStats> sim = replay(*dry, recorded);
        ASSERT_EQ(sim.size(), real.size());
        for (size_t i = 0; i < sim.size(); ++i) {
          EXPECT_TRUE(sim[i].same_counts(real[i]))
              << "request " << i << "\nreal " << nlohmann::json(real[i]).dump() << "\nsim  " << nlohmann::json(sim[i]).dump();
        }
      }
}

TEST_F(SlotOnTinyModel, DivergenceCheckpointIsTheStateAtL) {
  // A checkpoint taken inside a pass (ForwardOptions::cuts) must equal the state a pass
  // ending exactly at L leaves behind.
  const std::vector<Req> reqs = episode();
  PolicyConfig pc;
  pc.kind = PolicyKind::Divergence;
  pc.divergence.min_gap = 4;
  SlotConfig cfg;
  cfg.batch = BatchConfig{64, 64, false};
  Slot slot(std::make_unique<ModelBackend>(*model_, kCtx), make_policy(pc), cfg);
  slot.prefill(Prompt{reqs[0].prompt, reqs[0].users});
  const RequestStats s = slot.prefill(Prompt{reqs[1].prompt, reqs[1].users}).stats;
  const Checkpoint* div = nullptr;
  for (const Checkpoint& c : slot.checkpoints())
    if (c.origin == CheckpointOrigin::Divergence) div = &c;
  ASSERT_NE(div, nullptr);
  EXPECT_EQ(div->pos, s.lcp);
  auto st = model_->new_sequence(kCtx);
  ForwardOutput fo;
  model_->forward(*st, std::span<const int32_t>(reqs[1].prompt.data(), static_cast<size_t>(s.lcp)), {}, fo);
  ASSERT_EQ(div->state.data.size(), static_cast<size_t>(st->recurrent_floats()));
  double diff = 0, mag = 0;
  for (int64_t i = 0; i < st->recurrent_floats(); ++i) {
    diff = std::max(diff, std::fabs(double(div->state.data[i]) - st->recurrent_data()[i]));
    mag = std::max(mag, std::fabs(double(st->recurrent_data()[i])));
  }
  EXPECT_LE(diff, 1e-4 * mag);
}

}  // namespace
}  // namespace tandem::serve

namespace tandem::serve {
namespace {

TEST_F(SlotOnTinyModel, BadTokensFailBeforeAnyStateChanges) {
  const std::vector<Req> reqs = episode();
  Slot slot(std::make_unique<ModelBackend>(*model_, kCtx), make_policy(PolicyConfig{}), SlotConfig{});
  slot.prefill(Prompt{reqs[0].prompt, reqs[0].users});
  slot.end_request();
  const auto cached = slot.cached_tokens();
  const auto held = slot.checkpoints().size();
  auto bad = reqs[1].prompt;
  bad.back() = static_cast<int32_t>(model_->hparams().n_vocab);
  EXPECT_THROW(slot.prefill(Prompt{bad, reqs[1].users}), std::invalid_argument);
  EXPECT_EQ(slot.cached_tokens(), cached);
  EXPECT_EQ(slot.checkpoints().size(), held);
  EXPECT_THROW(slot.decode(0), std::logic_error);  // no open request
  slot.prefill(Prompt{reqs[1].prompt, reqs[1].users});
  EXPECT_THROW(slot.decode(-1), std::invalid_argument);
  EXPECT_EQ(slot.decode(0).size(), static_cast<size_t>(model_->hparams().n_vocab));
}

// A negative prompt tail is refused when it is set (the engine's construction), not by every
// later prompt pass; zero (no per-token tail) is accepted.
TEST_F(SlotOnTinyModel, NegativePromptTailIsRefusedWhenSet) {
  ModelBackend backend(*model_, kCtx);
  EXPECT_THROW(backend.set_prompt_tail(-1), std::invalid_argument);
  EXPECT_NO_THROW(backend.set_prompt_tail(0));
}


// Issue 30: a growing history (one line appended per step, a header and the screen after it)
// alternating with a second kind of request, under the divergence forecast and the prompt cache's
// restorable choice: greedy outputs equal a plain full prefill on every request, the forecast's
// checkpoints are restored, and the dry run reproduces every count.
TEST_F(SlotOnTinyModel, GreedyOutputsUnchangedByTheForecastAndTheRestorableCache) {
  const int32_t n_vocab = static_cast<int32_t>(model_->hparams().n_vocab);
  std::mt19937 rng(11);
  auto rnd = [&](int n) { return random_ids(rng, n, n_vocab); };
  const auto rules = rnd(40), task = rnd(10), header = rnd(20), closing = rnd(10), srule = rnd(15);
  std::vector<std::vector<int32_t>> lines, screens;
  for (int i = 0; i < 6; ++i) {
    lines.push_back(rnd(12 + i));
    screens.push_back(rnd(60 + 5 * i));
  }
  auto cat = [](std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  std::vector<Req> reqs;
  for (int k = 0; k < 5; ++k) {
    Req a{cat({rules, task}), {8}};
    for (int i = 0; i < k; ++i) a.prompt.insert(a.prompt.end(), lines[i].begin(), lines[i].end());
    a.prompt = cat({a.prompt, header, screens[k], closing});
    reqs.push_back(a);
    reqs.push_back(Req{cat({rules, srule, screens[k], screens[k + 1], closing}), {8}});  // the summary kind
  }
  std::vector<std::vector<int32_t>> ref_out(reqs.size());
  std::vector<std::vector<float>> ref_first(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) reference(reqs[i], ref_out[i], ref_first[i]);

  SlotConfig cfg;
  cfg.batch = BatchConfig{32, 8, true};
  cfg.ctx_checkpoints = 4;
  for (bool forecast : {false, true}) {
    SCOPED_TRACE(forecast ? "forecast" : "no forecast");
    PolicyConfig pc;
    pc.kind = PolicyKind::Divergence;
    pc.divergence.min_gap = 4;
    pc.divergence.forecast = forecast;
    PromptCache cache({.budget_mib = 64, .select = CacheSelect::Restorable}),
        dry_cache({.budget_mib = 64, .select = CacheSelect::Restorable});
    Slot slot(std::make_unique<ModelBackend>(*model_, kCtx), make_policy(pc), cfg);
    slot.set_prompt_cache(&cache);
    std::vector<RequestStats> real;
    std::vector<RecordedRequest> recorded;
    int64_t forecast_restores = 0;
    std::vector<int64_t> forecasts;
    for (size_t i = 0; i < reqs.size(); ++i) {
      const PrefillReport rep = slot.prefill(Prompt{reqs[i].prompt, reqs[i].users});
      if (std::find(forecasts.begin(), forecasts.end(), rep.stats.restore_pos) != forecasts.end()) ++forecast_restores;
      const std::vector<int32_t> out = greedy_output(slot, rep.logits);
      EXPECT_EQ(out, ref_out[i]) << "request " << i;
      real.push_back(slot.end_request());
      for (const Checkpoint& c : slot.checkpoints())
        if (c.origin == CheckpointOrigin::Forecast) forecasts.push_back(c.pos);
      RecordedRequest rr;
      rr.prompt = reqs[i].prompt;
      rr.user_starts = reqs[i].users;
      rr.output.assign(out.begin(), out.end() - 1);
      recorded.push_back(std::move(rr));
    }
    if (forecast) EXPECT_GE(forecast_restores, 3);  // action prompts 3..5 restore their predecessor's
    auto dry = make_dry_run_slot(make_policy(pc), cfg, NullBackend::for_model(model_->shape(), kCtx));
    dry->set_prompt_cache(&dry_cache);
    const std::vector<RequestStats> sim = replay(*dry, recorded);
    ASSERT_EQ(sim.size(), real.size());
    for (size_t i = 0; i < sim.size(); ++i) EXPECT_TRUE(sim[i].same_counts(real[i])) << "request " << i;
  }
}

}  // namespace
}  // namespace tandem::serve
