// The replay model against tandem-server on issue 30's alternating layout (agent/history_trace_test.cpp
// has the layouts' other tests): the server's request log and tandem-sim's prediction for the same
// flags agree request by request.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/episode_gen.h"
#include "agent/request_tokens.h"
#include "agent/sim.h"
#include "http/routes/http_test_util.h"
#include "model/test_paths.h"
#include "serve/engine/engine.h"
#include "sim_test_util.h"

namespace tandem::agent {
namespace {

// Two slots instead of the prompt cache (llama.cpp's -np 2, no cache): the server's request log
// and the replay model's prediction for the same flags agree request by request on the
// alternating layout. And the finding: the two kinds do not separate. The engine gives a request
// the idle slot with the longest common prefix (llama.cpp: the most similar above 10%), and an
// empty slot shares nothing, so the summary prompt follows the action prompt into the first slot
// and every later request does too: -np 2 serves exactly as one slot.
TEST(HistoryLayouts, TwoSlotsReplayedAsTheServerPicksThem) {
  auto& tm = http::testing::TinyModel::get();
  GenOptions go;
  go.trace_layout = GenOptions::Layout::Alternating;
  go.episodes = 1;
  go.steps = 4;
  go.controls_scale = 0.4;
  const auto gen = generate_trace(go);
  std::vector<nlohmann::ordered_json> bodies;
  for (const auto& g : gen) bodies.push_back(g.record.body);
  const ServeSettings st = parse_config("np2: -np 2 -c 32768 --cache-ram 0");
  serve::EngineConfig cfg = st;
  std::vector<nlohmann::ordered_json> log;
  testing::serve_and_log(cfg, bodies, std::string(TANDEM_BINARY_DIR) + "/test-tmp-history-np2.jsonl", log);
  if (HasFatalFailure()) return;
  std::vector<serve::RecordedRequest> recorded;
  for (size_t i = 0; i < gen.size(); ++i)
    recorded.push_back(recorded_request_from_log(tokenize_request(*tm.tok, tm.tmpl, gen[i].record.body), log[i]));
  const auto sim = simulate(recorded, st, tm.model->shape());
  ASSERT_EQ(sim.size(), log.size());
  for (size_t i = 0; i < sim.size(); ++i) {
    const serve::RequestStats server = nlohmann::json::parse(log[i]["timings"].dump()).get<serve::RequestStats>();
    EXPECT_TRUE(sim[i].same_counts(server)) << "request " << i + 1 << "\nserver " << nlohmann::json(server).dump()
                                            << "\nsim    " << nlohmann::json(sim[i]).dump();
  }
  const auto one = simulate(recorded, parse_config("np1: -c 32768 --cache-ram 0"), tm.model->shape());
  for (size_t i = 0; i < sim.size(); ++i) EXPECT_TRUE(sim[i].same_counts(one[i])) << "request " << i + 1;
}

}  // namespace
}  // namespace tandem::agent
