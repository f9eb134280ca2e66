// LFM2 and Granite-4.0-H served over HTTP (generated tiny files, model/hybrid_generator.h): the
// answers are the same under every checkpoint policy, with grammar-forced speculation (verified
// in copy mode: these models keep no replay log and have no MTP head), after an idle unload and
// reload, and a screenshot request is refused with a clear error.
#include <gtest/gtest.h>

#include <map>

#include "http/routes/http_test_util.h"
#include "model/architectures.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

struct Served {
  std::unique_ptr<HybridModel> model;
  std::unique_ptr<text::Tokenizer> tok;
  text::ChatTemplate tmpl{text::ChatTemplateFamily::ChatML};
};

Served& served(const std::string& preset) {
  static std::map<std::string, Served> cache;
  auto it = cache.find(preset);
  if (it != cache.end()) return it->second;
  Served s;
  LoadOptions lo;
  lo.n_threads = 2;
  s.model = load_model(ensure_hybrid_model(preset, "F32"), lo);
  s.tok = text::Tokenizer::from_gguf(s.model->file());
  s.tmpl = text::ChatTemplate::from_gguf_template(s.tok->vocab().chat_template());
  return cache.emplace(preset, std::move(s)).first->second;
}

const char* kHybridActionGbnf = R"(root ::= "{\"action\":\"" ("tap" | "back" | "type") "\",\"target\":" [0-9] "}")";

Json hybrid_step(int k, bool grammar) {
  const std::string rules = "You are a phone agent. Answer with one JSON action. Screen: [0] Back [1] Search [2] Menu.";
  Json body{{"messages", Json::array({Json{{"role", "system"}, {"content", rules}},
                                      Json{{"role", "user"}, {"content", "Task: step " + std::to_string(k)}}})},
            {"max_tokens", 12},
            {"temperature", 0}};
  if (grammar) body["grammar"] = kHybridActionGbnf;
  else body["ignore_eos"] = true;
  return body;
}

// The outputs (token ids, from the request log) of four steps, two of them constrained.
std::vector<std::vector<int32_t>> run_steps(TestServer& s, Json* last = nullptr) {
  auto c = s.client();
  std::vector<std::vector<int32_t>> out;
  for (int k = 0; k < 4; ++k) {
    auto r = c->Post("/v1/chat/completions", to_text(hybrid_step(k, k % 2 == 1)), "application/json");
    EXPECT_TRUE(r);
    if (!r) return out;
    EXPECT_EQ(r->status, 200) << r->body;
    if (last) *last = Json::parse(r->body);
    out.push_back(s.take_records().back()["output"].get<std::vector<int32_t>>());
  }
  return out;
}

class HttpHybrids : public ::testing::TestWithParam<const char*> {};

TEST_P(HttpHybrids, AnswersAlikeUnderPoliciesSpeculationAndAnUnload) {
  Served& m = served(GetParam());
  std::vector<std::vector<int32_t>> stock;
  {
    serve::EngineConfig cfg = small_engine();
    cfg.policy.kind = serve::PolicyKind::Stock;
    TestServer s(*m.model, *m.tok, m.tmpl, cfg);
    stock = run_steps(s);
  }
  ASSERT_EQ(stock.size(), 4u);
  {
    TestServer s(*m.model, *m.tok, m.tmpl, small_engine());  // divergence (the default)
    EXPECT_EQ(run_steps(s), stock);
    const Json props = Json::parse(s.client()->Get("/props")->body);
    EXPECT_EQ(props["serving"]["checkpoint_policy"], "divergence") << props.dump();
    EXPECT_EQ(props["architecture"], m.model->architecture());
  }
  {
    serve::EngineConfig cfg = small_engine();
    cfg.speculation.enabled = true;  // no MTP head: only grammar-forced drafts, verified in copy mode
    TestServer s(*m.model, *m.tok, m.tmpl, cfg);
    EXPECT_EQ(run_steps(s), stock);
    EXPECT_FALSE(s.engine->snapshot().speculation.mtp_drafts);
    EXPECT_GT(s.engine->snapshot().totals.drafts_proposed, 0);
  }
  {
    serve::EngineConfig cfg = small_engine();
    cfg.unload_idle_ms = 150;
    TestServer s(*m.model, *m.tok, m.tmpl, cfg);
    auto c = s.client();
    auto r = c->Post("/v1/chat/completions", to_text(hybrid_step(0, false)), "application/json");
    ASSERT_TRUE(r);
    ASSERT_TRUE(wait_until([&] { return !s.engine->snapshot().lifecycle.weights_loaded; }));
    Json last;
    EXPECT_EQ(run_steps(s, &last), stock);
    EXPECT_EQ(s.engine->snapshot().lifecycle.reloads, 1);
  }
}

TEST_P(HttpHybrids, ScreenshotsAreRefusedWithAClearError) {
  Served& m = served(GetParam());
  vision::VisionModel* vision = TinyModel::get().vision();  // rows of width 256, as these models
  try {
    serve::Engine e(*m.model, *m.tok, small_engine(), vision);
    ADD_FAILURE() << "an engine with an image path was built on a " << m.model->architecture() << " model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("takes no image rows"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HttpHybrids, ::testing::Values("lfm2-tiny", "granite-tiny"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tandem::http
