// Acceptance test of the replay model (serving spec §6): the default agent trace (61 requests)
// is served by tandem-server's HTTP front and engine on the tiny model, with the server's own
// --log-requests log; tandem-sim's prediction from the trace's token streams (and the log's
// generated tokens) must equal the logged N - R, passes and every other count on every request,
// for each of the three policies, with and without batch consolidation.
#include <gtest/gtest.h>

#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "agent/sim.h"
#include "http/api/request_log.h"
#include "http/routes/http_test_util.h"
#include "http/routes/server.h"
#include "model/test_paths.h"
#include "serve/engine/engine.h"
#include "sim_test_util.h"

namespace tandem::agent {
namespace {

using Trace = decltype(generate_trace({}));
using testing::serve_and_log;

// The trace's request bodies, in order.
std::vector<nlohmann::ordered_json> bodies(const Trace& gen) {
  std::vector<nlohmann::ordered_json> b;
  for (const auto& g : gen) b.push_back(g.record.body);
  return b;
}

TEST(ReplayModelVsServer, EqualsTheServersRequestLogOnTheDefaultTrace) {
  auto& tm = http::testing::TinyModel::get();
  const auto gen = generate_trace({});
  ASSERT_EQ(gen.size(), 61u);
  std::vector<RequestTokens> reqs;
  for (const auto& g : gen) reqs.push_back(tokenize_request(*tm.tok, tm.tmpl, g.record.body));

  for (const char* policy : {"stock", "marconi", "divergence"})
    for (const char* consolidate : {"off", "on"}) {
      const std::string flags =
          std::string("--checkpoint-policy ") + policy + " --consolidate-batches " + consolidate;
      const ServeSettings st = parse_config(flags);
      SCOPED_TRACE(flags);
      const std::string log_path = std::string(TANDEM_BINARY_DIR) + "/test-tmp-agent-" + policy + "-" + consolidate + ".jsonl";
      serve::EngineConfig cfg;  // the server's defaults, with the configuration's flags
      cfg.n_parallel = 1;
      cfg.n_ctx = st.n_ctx;
      cfg.slot = st.slot;
      cfg.policy = st.policy;
      cfg.cache_ram_mib = st.cache_ram_mib;
      std::vector<nlohmann::ordered_json> log;
      serve_and_log(cfg, bodies(gen), log_path, log);
      if (HasFatalFailure()) return;
      std::vector<serve::RecordedRequest> recorded;
      for (size_t i = 0; i < gen.size(); ++i) {
        ASSERT_EQ(log[i]["prompt"].get<std::vector<int32_t>>(), reqs[i].ids) << "request " << i + 1;
        ASSERT_EQ(log[i]["user_starts"].get<std::vector<int64_t>>(), reqs[i].user_starts) << "request " << i + 1;
        recorded.push_back(recorded_request(reqs[i], log[i]["output"].get<std::vector<int32_t>>()));
      }
      const auto sim = simulate(recorded, st, tm.model->shape());
      int64_t nr = 0, passes = 0;
      for (size_t i = 0; i < gen.size(); ++i) {
        const auto server = nlohmann::json::parse(log[i]["timings"].dump()).get<serve::RequestStats>();
        EXPECT_EQ(sim[i].new_tokens, server.new_tokens) << "request " << i + 1;
        EXPECT_EQ(sim[i].passes, server.passes) << "request " << i + 1;
        EXPECT_TRUE(sim[i].same_counts(server)) << "request " << i + 1 << "\nserver " << nlohmann::json(server).dump()
                                                << "\nsim    " << nlohmann::json(sim[i]).dump();
        nr += server.new_tokens;
        passes += server.passes;
      }
      std::printf("%-55s server == sim on %zu requests (N-R %lld, passes %lld)\n", flags.c_str(), gen.size(),
                  static_cast<long long>(nr), static_cast<long long>(passes));
      std::remove(log_path.c_str());
    }
}

// The same with speculation on (MTP drafts, the server's defaults): what the head proposed and
// the target accepted is the log's (timings.step_drafted / step_accepted); every other count —
// verification passes, roll-backs, tokens fed, and through them the next request's restore,
// passes and checkpoints — is the dry run's own and must equal the server's on every request.
TEST(ReplayModelVsServer, EqualsASpeculatingServersRequestLog) {
  auto& tm = http::testing::TinyModel::get();
  if (!tm.model->has_mtp()) GTEST_SKIP() << "the tiny test model has no MTP block";
  const auto gen = generate_trace({});
  std::vector<RequestTokens> reqs;
  for (const auto& g : gen) reqs.push_back(tokenize_request(*tm.tok, tm.tmpl, g.record.body));
  const ServeSettings st = parse_config("--spec on --draft-max 3");
  ASSERT_TRUE(st.speculation.enabled);
  const std::string log_path = std::string(TANDEM_BINARY_DIR) + "/test-tmp-agent-spec.jsonl";
  serve::EngineConfig cfg = st;  // the configuration is the server's EngineConfig
  cfg.n_parallel = 1;
  std::vector<nlohmann::ordered_json> log;
  serve_and_log(cfg, bodies(gen), log_path, log);
  if (HasFatalFailure()) return;
  std::vector<serve::RecordedRequest> recorded;
  for (size_t i = 0; i < gen.size(); ++i) recorded.push_back(recorded_request_from_log(reqs[i], log[i]));
  const auto sim = simulate(recorded, st, tm.model->shape());
  int64_t verify = 0, roll_backs = 0;
  for (size_t i = 0; i < gen.size(); ++i) {
    const auto server = nlohmann::json::parse(log[i]["timings"].dump()).get<serve::RequestStats>();
    verify += server.verify_passes;
    roll_backs += server.roll_backs;
    EXPECT_TRUE(sim[i].same_counts(server)) << "request " << i + 1 << "\nserver " << nlohmann::json(server).dump()
                                            << "\nsim " << nlohmann::json(sim[i]).dump();
  }
  EXPECT_GT(verify, 0);      // speculation ran
  EXPECT_GT(roll_backs, 0);  // and rejected drafts (random weights: the head is mostly wrong)
}

}  // namespace
}  // namespace tandem::agent
