// Speculative decoding through the server (--spec on): the answers are token for token those of
// a server without it, greedy and sampled with a seed, and the timings count the drafts.
#include <gtest/gtest.h>

#include <algorithm>

#include "http/routes/http_test_util.h"
#include "serve/settings/server_options.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;

std::vector<Json> requests() {
  std::vector<Json> out;
  const std::string rules = "You are a phone agent. Answer with one JSON action. Screen: [0] Back [1] Search [2] Menu.";
  for (int k = 0; k < 4; ++k)
    out.push_back(Json{{"messages", Json::array({Json{{"role", "system"}, {"content", rules}},
                                                 Json{{"role", "user"}, {"content", "Task: step " + std::to_string(k)}}})},
                       {"max_tokens", 9},
                       {"ignore_eos", true}});
  return out;
}

// The requests' outputs; their drafts and verification passes are added up, and the most drafts
// of one step kept in max_step_drafts.
std::vector<std::vector<int32_t>> answers(TestServer& s, const std::vector<Json>& reqs, const Json& sampling,
                                          int64_t* drafts, int64_t* verify_passes, int64_t* max_step_drafts = nullptr) {
  auto c = s.client();
  std::vector<std::vector<int32_t>> out;
  for (Json body : reqs) {
    body.update(sampling);
    auto r = c->Post("/v1/chat/completions", to_text(body), "application/json");
    EXPECT_TRUE(r);
    if (!r) return out;
    EXPECT_EQ(r->status, 200) << r->body;
    const Json j = Json::parse(r->body);
    *drafts += j["timings"]["drafts_proposed"].get<int64_t>();
    const Json rec = s.take_records().back();
    *verify_passes += rec["timings"]["verify_passes"].get<int64_t>();
    if (max_step_drafts)
      for (const Json& d : rec["timings"]["step_drafted"]) *max_step_drafts = std::max(*max_step_drafts, d.get<int64_t>());
    out.push_back(rec["output"].get<std::vector<int32_t>>());
  }
  return out;
}

TEST(HttpSpeculation, AnswersEqualPlainDecodingGreedyAndSeededSampling) {
  const std::vector<Json> reqs = requests();
  for (const Json& sampling : {Json{{"temperature", 0}}, Json{{"temperature", 0.9}, {"top_k", 40}, {"seed", 1234}}}) {
    SCOPED_TRACE(to_text(sampling));
    int64_t drafts_off = 0, passes_off = 0, drafts_on = 0, passes_on = 0;
    std::vector<std::vector<int32_t>> plain, spec;
    {
      TestServer s(small_engine());
      plain = answers(s, reqs, sampling, &drafts_off, &passes_off);
    }
    {
      serve::EngineConfig cfg = small_engine();
      cfg.speculation.enabled = true;
      cfg.speculation.draft_max = 3;
      TestServer s(cfg);
      spec = answers(s, reqs, sampling, &drafts_on, &passes_on);
      auto props = s.client()->Get("/props");
      ASSERT_TRUE(props);
      EXPECT_EQ(Json::parse(props->body)["serving"]["speculation"]["enabled"], true);
      // The speculator's memory is reported: at least its MTP KV cache and the verification
      // pass's replay log (one recurrent state).
      auto metrics = s.client()->Get("/metrics");
      ASSERT_TRUE(metrics);
      const std::string key = "\ntandem_speculation_bytes ";
      const size_t at = metrics->body.find(key);
      ASSERT_NE(at, std::string::npos) << metrics->body;
      EXPECT_GT(std::stod(metrics->body.substr(at + key.size())), 1e5) << metrics->body.substr(at, 60);
    }
    ASSERT_EQ(plain.size(), reqs.size());
    EXPECT_EQ(spec, plain);
    EXPECT_EQ(drafts_off, 0);
    EXPECT_EQ(passes_off, 0);
    EXPECT_GT(drafts_on, 0);
    EXPECT_GT(passes_on, 0);
  }
}

// Speculation per request on a --spec on server: "speculative": false or llama.cpp's
// "speculative.n_max": 0 drafts nothing for that request, "speculative.n_max": 1 at most one draft
// a step; the answers are those of a server without speculation, greedy and sampled, and the
// requests that do not say still speculate.
TEST(HttpSpeculation, PerRequestSwitchKeepsTheAnswers) {
  const std::vector<Json> reqs = requests();
  serve::EngineConfig cfg = small_engine();
  cfg.speculation.enabled = true;
  cfg.speculation.draft_max = 3;
  for (const Json& sampling : {Json{{"temperature", 0}}, Json{{"temperature", 0.9}, {"top_k", 40}, {"seed", 1234}}}) {
    SCOPED_TRACE(to_text(sampling));
    std::vector<std::vector<int32_t>> plain;
    {
      int64_t drafts = 0, passes = 0;
      TestServer s(small_engine());
      plain = answers(s, reqs, sampling, &drafts, &passes);
    }
    TestServer s(cfg);
    for (const Json& opt : {Json{{"speculative", false}}, Json{{"speculative.n_max", 0}},
                            Json{{"speculative", true}, {"speculative.n_max", 0}}, Json{{"speculative.n_max", 1}},
                            Json::object()}) {
      SCOPED_TRACE(to_text(opt));
      Json with = sampling;
      with.update(opt);
      int64_t drafts = 0, passes = 0, most = 0;
      EXPECT_EQ(answers(s, reqs, with, &drafts, &passes, &most), plain);
      const int64_t cap = opt.contains("speculative.n_max") ? opt["speculative.n_max"].get<int64_t>()
                          : opt.contains("speculative")     ? 0
                                                            : 3;
      EXPECT_LE(most, cap);
      if (cap == 0) EXPECT_EQ(drafts + passes, 0);
      else EXPECT_GT(drafts, 0);
    }
  }
  TestServer s(cfg);
  for (const Json& bad : {Json{{"speculative", "off"}}, Json{{"speculative.n_max", -1}}, Json{{"speculative.n_max", 1.5}}}) {
    Json body = reqs[0];
    body.update(bad);
    auto r = s.client()->Post("/v1/chat/completions", to_text(body), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(Json::parse(r->body)["error"]["param"], bad.begin().key()) << r->body;
  }
}

// Without an MTP block speculation drafts only what a request's grammar forces: requests
// without one decode token by token (no drafts), and the engine says so.
TEST(HttpSpeculation, ModelWithoutMtpDraftsOnlyWhatAGrammarForces) {
  auto m = Qwen35Model::load(ensure_tiny_model("F32", /*mtp=*/false), 1);
  auto tok = text::Tokenizer::from_gguf(m->file());
  serve::EngineConfig cfg = small_engine();
  cfg.speculation.enabled = true;
  serve::Engine e(*m, *tok, cfg);
  EXPECT_TRUE(e.snapshot().speculation.enabled);
  EXPECT_FALSE(e.snapshot().speculation.mtp_drafts);
  serve::EngineRequest r;
  r.prompt = tok->encode("Hello there");
  r.params.sampling.temperature = 0;
  r.params.n_predict = 6;
  r.params.ignore_eos = true;
  auto g = e.submit(r);
  ASSERT_TRUE(g->wait_done(std::chrono::seconds(60)));
  EXPECT_EQ(g->result().output.size(), 6u);
  EXPECT_EQ(g->result().stats.drafts_proposed, 0);
}

TEST(ServerOptions, SpeculationFlags) {
  const serve::ServerOptions o = serve::parse_server_args({"-m", "x.gguf", "--spec", "on", "--draft-max", "2", "--draft-min", "1",
                                             "--draft-p-min", "0.25", "--spec-rollback-aware", "off",
                                             "--spec-column-shared", "off", "--spec-trimmed-head", "off",
                                             "--spec-rollback", "copy", "--spec-mtp", "off", "--spec-forced", "off",
                                             "--json-whitespace", "compact", "--grammar-cache", "8"});
  EXPECT_TRUE(o.engine.speculation.enabled);
  EXPECT_EQ(o.engine.speculation.draft_max, 2);
  EXPECT_EQ(o.engine.speculation.draft_min, 1);
  EXPECT_FLOAT_EQ(o.engine.speculation.p_min, 0.25f);
  EXPECT_FALSE(o.engine.speculation.rollback_aware_prefill);
  EXPECT_FALSE(o.engine.speculation.column_shared_verify);
  EXPECT_FALSE(o.engine.speculation.trimmed_head);
  EXPECT_FALSE(o.engine.speculation.replay_rollback);
  EXPECT_FALSE(o.engine.speculation.mtp_drafts);
  EXPECT_FALSE(o.engine.speculation.forced_drafts);
  EXPECT_TRUE(o.json_compact);
  EXPECT_EQ(o.engine.grammar_cache_mib, 8u);
  EXPECT_TRUE(serve::default_server_options().engine.speculation.mtp_drafts);
  EXPECT_TRUE(serve::default_server_options().engine.speculation.forced_drafts);
  EXPECT_FALSE(serve::default_server_options().json_compact);
  EXPECT_THROW(serve::parse_server_args({"-m", "x.gguf", "--json-whitespace", "tight"}), std::invalid_argument);
  EXPECT_TRUE(serve::default_server_options().engine.speculation.replay_rollback);
  EXPECT_FALSE(serve::default_server_options().engine.speculation.enabled);
  EXPECT_THROW(serve::parse_server_args({"-m", "x.gguf", "--spec-rollback", "maybe"}), std::invalid_argument);
  EXPECT_THROW(serve::parse_server_args({"-m", "x.gguf", "--draft-p-min", "1.5"}), std::invalid_argument);
  EXPECT_THROW(serve::parse_server_args({"-m", "x.gguf", "--draft-max", "0"}), std::invalid_argument);
  EXPECT_THROW(serve::parse_server_args({"-m", "x.gguf", "--draft-min", "4", "--draft-max", "2"}), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::http
