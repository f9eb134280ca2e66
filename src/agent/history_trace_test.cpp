// Issue 30's layouts (a growing history; action and summary prompts alternating): the generator's
// structure; request by request on a small generated episode, where each checkpoint is placed,
// which rule placed it, and that the next request of its kind restores it; and the replay model
// equal to the engine on both layouts under every policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "agent/sim.h"
#include "model/qwen35/qwen35_model.h"
#include "model/test_models.h"
#include "model/test_paths.h"
#include "serve/backend/dry_run.h"
#include "serve/backend/model_backend.h"
#include "serve/backend/null_backend.h"
#include "serve/engine/engine.h"
#include "serve/meter/flop_model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace tandem::agent {
namespace {

const std::string& text_of(const GeneratedRequest& g) {
  return g.record.body["messages"][0]["content"].get_ref<const std::string&>();
}

size_t section_end(const GeneratedRequest& g, const std::string& name) {
  for (const auto& s : g.sections)
    if (s.name == name) return s.end;
  ADD_FAILURE() << "no section " << name;
  return 0;
}

TEST(HistoryLayouts, TheHistoryGrowsByOneLineAndNeverDropsOne) {
  GenOptions go;
  go.trace_layout = GenOptions::Layout::Growing;
  go.episodes = 2;
  go.steps = 5;
  const auto gen = generate_trace(go);
  ASSERT_EQ(gen.size(), 10u);
  for (size_t i = 1; i < gen.size(); ++i) {
    if (gen[i].record.episode != gen[i - 1].record.episode) continue;
    EXPECT_FALSE(gen[i].summary);
    const size_t prev_end = section_end(gen[i - 1], "task_history"), end = section_end(gen[i], "task_history");
    const size_t line = end - prev_end;
    if (gen[i].record.step >= 3) {  // step 2 replaced "You just started ..." with line 1
      // The previous prompt's history is a prefix of this one; one line (~60-110 tokens) follows.
      EXPECT_EQ(text_of(gen[i]).compare(0, prev_end, text_of(gen[i - 1]), 0, prev_end), 0) << "request " << i + 1;
      EXPECT_GT(line, 150u);
      EXPECT_LT(line, 1200u);
    }
    EXPECT_NE(text_of(gen[i]).find("Step " + std::to_string(gen[i].record.step - 1) + "- Action selected: "),
              std::string::npos);
  }
}

TEST(HistoryLayouts, ASummaryPromptFollowsEveryStepButTheLast) {
  GenOptions go;
  go.trace_layout = GenOptions::Layout::Alternating;
  go.episodes = 2;
  go.steps = 4;
  const auto gen = generate_trace(go);
  ASSERT_EQ(gen.size(), 14u);  // 2 x (4 action + 3 summary)
  for (size_t i = 0; i < gen.size(); ++i) {
    const size_t in_ep = i % 7;
    EXPECT_EQ(gen[i].summary, in_ep % 2 == 1) << "request " << i + 1;
    if (!gen[i].summary) continue;
    // The summary's before screen is the action prompt's screen; the summary becomes the next
    // action prompt's newest history line.
    const std::string& act = text_of(gen[i - 1]);
    const size_t list = act.find("UI element 0:");
    ASSERT_NE(list, std::string::npos);
    const std::string first_element = act.substr(list, act.find('\n', list) - list);
    EXPECT_NE(text_of(gen[i]).find(first_element), std::string::npos);
    EXPECT_NE(text_of(gen[i]).find("Summary of this step: "), std::string::npos);
    EXPECT_FALSE(gen[i].record.expected_action.has_value());
  }
  // The paper-like layout stays the default trace.
  const auto paper = generate_trace({});
  EXPECT_EQ(paper.size(), 61u);
  EXPECT_TRUE(std::none_of(paper.begin(), paper.end(), [](const auto& g) { return g.summary; }));
}

struct Tiny {
  std::unique_ptr<Qwen35Model> model;
  std::unique_ptr<text::Tokenizer> tok;
  text::ChatTemplate tmpl;
};
Tiny load_tiny() {
  auto model = Qwen35Model::load(ensure_tiny_model("F32"), 2);
  auto tok = text::Tokenizer::from_gguf(model->file());
  auto tmpl = text::ChatTemplate::from_gguf_template(tok->vocab().chat_template());
  return Tiny{std::move(model), std::move(tok), std::move(tmpl)};
}

// One episode of the alternating layout, replayed with the server's defaults (divergence with the
// forecast, consolidation, 8 checkpoints, the prompt cache selecting by restorable position):
// prints each request's checkpoints with the rule that placed them, and checks that from step 3
// on every action prompt restores the forecast checkpoint its predecessor placed, so that it
// prefills the KV bound against that predecessor (plus the forecast's one-token margin).
TEST(HistoryLayouts, RequestByRequestEachActionPromptRestoresThePreviousOnesForecast) {
  const Tiny t = load_tiny();
  GenOptions go;
  go.trace_layout = GenOptions::Layout::Alternating;
  go.episodes = 1;
  go.steps = 6;
  go.controls_scale = 0.5;
  const auto gen = generate_trace(go);
  ServeSettings st;
  st.n_ctx = 1 << 16;
  auto slot = serve::make_dry_run_slot(serve::make_policy(st.policy), st.slot,
                                       serve::NullBackend::for_model(t.model->shape(), st.n_ctx));
  serve::PromptCache cache(serve::prompt_cache_options(st));
  ASSERT_EQ(cache.options().select, serve::CacheSelect::Restorable);
  slot->set_prompt_cache(&cache);
  int64_t forecast = -1;          // the last action prompt's forecast checkpoint
  std::vector<int32_t> last_action;
  std::printf("req kind    step     N     L     R   N-R  checkpoints placed (rule)\n");
  for (size_t i = 0; i < gen.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i + 1));
    const RequestTokens rt = tokenize_request(*t.tok, t.tmpl, gen[i].record.body);
    const serve::RecordedRequest rec = recorded_request(rt, expected_output(*t.tok, gen[i].record));
    slot->prefill(serve::Prompt{rec.prompt, rec.user_starts});
    for (int32_t tok : rec.output) slot->decode(tok);
    const serve::RequestStats s = slot->end_request();
    std::string placed;
    int64_t this_forecast = -1;
    for (const serve::Checkpoint& c : slot->checkpoints())
      if (c.request == slot->requests()) {
        placed += " " + std::to_string(c.pos) + " (" + std::string(serve::to_string(c.origin)) + ")";
        if (c.origin == serve::CheckpointOrigin::Forecast) this_forecast = c.pos;
      }
    std::printf("%3zu %-7s %4lld %5lld %5lld %5lld %5lld %s%s\n", i + 1, gen[i].summary ? "summary" : "action",
                static_cast<long long>(gen[i].record.step), static_cast<long long>(s.n_prompt),
                static_cast<long long>(s.lcp), static_cast<long long>(s.restore_pos),
                static_cast<long long>(s.new_tokens), placed.c_str(), s.prompt_cache_loaded ? "  [cache entry loaded]" : "");
    if (gen[i].summary) continue;
    if (gen[i].record.step >= 3) {
      EXPECT_EQ(s.restore_pos, forecast);
      // The KV bound against that predecessor, plus at most the forecast's margin (the token before
      // the re-alignment, kept in case BPE re-merges it; this tokenizer does not here).
      const int64_t bound = s.n_prompt - serve::common_prefix(last_action, rec.prompt);
      EXPECT_GE(s.new_tokens, bound);
      EXPECT_LE(s.new_tokens, bound + serve::ForecastOptions{}.margin);
    }
    if (gen[i].record.step >= 2 && gen[i].record.step < go.steps) EXPECT_GT(this_forecast, s.restore_pos);
    forecast = this_forecast;
    last_action = rec.prompt;
  }
}

// tandem-sim's prediction equals the engine request by request on both new layouts, for each
// policy (and today's divergence rule without the forecast and with llama.cpp's cache selection).
TEST(HistoryLayouts, ReplayModelEqualsTheEngine) {
  const Tiny t = load_tiny();
  for (auto layout : {GenOptions::Layout::Growing, GenOptions::Layout::Alternating}) {
    GenOptions go;
    go.trace_layout = layout;
    go.episodes = 1;
    go.steps = 4;
    go.controls_scale = 0.4;
    const auto gen = generate_trace(go);
    std::vector<RequestTokens> reqs;
    for (const auto& g : gen) reqs.push_back(tokenize_request(*t.tok, t.tmpl, g.record.body));
    for (const char* flags : {"--checkpoint-policy stock --consolidate-batches off", "--checkpoint-policy marconi",
                              "--checkpoint-policy divergence",
                              "--checkpoint-policy divergence --checkpoint-forecast off --cache-select fractions"}) {
      ServeSettings st = parse_config(std::string(flags) + " -c 32768");
      SCOPED_TRACE(std::string(layout == GenOptions::Layout::Growing ? "growing " : "alternating ") + flags);
      serve::PolicyConfig pc = st.policy;
      pc.marconi.flops = serve::FlopModel::for_model(t.model->shape());
      serve::Slot slot(std::make_unique<serve::ModelBackend>(*t.model, st.n_ctx), serve::make_policy(pc), st.slot);
      serve::PromptCache cache(serve::prompt_cache_options(st));
      slot.set_prompt_cache(&cache);
      std::vector<serve::RequestStats> real;
      std::vector<serve::RecordedRequest> recorded;
      for (size_t i = 0; i < reqs.size(); ++i) {
        const serve::PrefillReport rep = slot.prefill(serve::Prompt{reqs[i].ids, reqs[i].user_starts});
        const int64_t max_out = max_output_tokens(gen[i].record.body);
        auto argmax = [](std::span<const float> v) {
          return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
        };
        std::vector<int32_t> sampled{argmax(rep.logits)};
        while (!t.tok->vocab().is_eog(sampled.back()) && static_cast<int64_t>(sampled.size()) < max_out)
          sampled.push_back(argmax(slot.decode(sampled.back())));
        real.push_back(slot.end_request());
        recorded.push_back(recorded_request(reqs[i], sampled));
      }
      const auto sim = simulate(recorded, st, t.model->shape());
      ASSERT_EQ(sim.size(), real.size());
      for (size_t i = 0; i < real.size(); ++i)
        EXPECT_TRUE(sim[i].same_counts(real[i])) << "request " << i + 1 << "\nengine " << nlohmann::json(real[i]).dump()
                                                 << "\nsim    " << nlohmann::json(sim[i]).dump();
    }
  }
}

}  // namespace
}  // namespace tandem::agent
