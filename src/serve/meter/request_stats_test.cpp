#include "serve/meter/request_stats.h"

#include <gtest/gtest.h>

namespace tandem::serve {
namespace {

TEST(RequestStats, JsonRoundTripCarriesEveryNumber) {
  RequestStats s;
  s.request = 7;
  s.policy = "divergence";
  s.consolidate = true;
  s.n_prompt = 600;
  s.lcp = 380;
  s.restore_pos = 350;
  s.new_tokens = 250;
  s.kv_bound = 220;
  s.passes = 2;
  s.pass_sizes = {88, 162};
  s.checkpoints_restored = 1;
  s.checkpoints_created = 2;
  s.checkpoints_evicted = 1;
  s.restored_pos = 350;
  s.created_positions = {380, 88};
  s.evicted_positions = {10};
  s.bytes_copied = 123456789;
  s.prefill_ms = 12.5;
  s.decode_ms = 40;
  s.tokens_generated = 14;
  s.ms_per_output_token = 40.0 / 14;
  const nlohmann::json j = s;
  for (const char* key : {"n_prompt", "lcp", "restore_pos", "new_tokens", "kv_bound", "passes", "checkpoints_restored",
                          "checkpoints_created", "checkpoints_evicted", "bytes_copied", "prefill_ms", "decode_ms",
                          "tokens_generated", "ms_per_output_token", "drafts_proposed", "drafts_accepted"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["drafts_proposed"], 0);
  const RequestStats back = j.get<RequestStats>();
  EXPECT_TRUE(back.same_counts(s));
  EXPECT_EQ(back.policy, "divergence");
  EXPECT_DOUBLE_EQ(back.prefill_ms, 12.5);
  EXPECT_EQ(nlohmann::json(back), j);
}

// Energy figures: cpu_ms a number; energy_j null where there is no RAPL figure (not 0), a number
// where there is one (0 included), and both kept by a round trip.
TEST(RequestStats, EnergyIsNullWithoutAFigureAndANumberWithOne) {
  RequestStats s;
  s.cpu_ms = 12.25;
  nlohmann::json j = s;
  ASSERT_TRUE(j.contains("cpu_ms"));
  EXPECT_DOUBLE_EQ(j["cpu_ms"].get<double>(), 12.25);
  ASSERT_TRUE(j.contains("energy_j"));
  EXPECT_TRUE(j["energy_j"].is_null());
  RequestStats back = j.get<RequestStats>();
  EXPECT_FALSE(back.energy_j.has_value());
  EXPECT_DOUBLE_EQ(back.cpu_ms, 12.25);

  for (double joules : {0.0, 3.5}) {
    s.energy_j = joules;
    j = s;
    ASSERT_TRUE(j["energy_j"].is_number());
    EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), joules);
    back = j.get<RequestStats>();
    ASSERT_TRUE(back.energy_j.has_value());
    EXPECT_DOUBLE_EQ(*back.energy_j, joules);
  }
}

TEST(RequestStats, SummaryAddsUp) {
  StatsSummary sum;
  RequestStats a, b;
  a.new_tokens = 100;
  a.passes = 2;
  b.new_tokens = 50;
  b.passes = 1;
  sum.add(a);
  sum.add(b);
  const nlohmann::json j = sum;
  EXPECT_EQ(j["new_tokens"], 150);
  EXPECT_DOUBLE_EQ(j["mean_passes"].get<double>(), 1.5);
}

}  // namespace
}  // namespace tandem::serve
