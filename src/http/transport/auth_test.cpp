#include "http/transport/auth.h"

#include <gtest/gtest.h>

#include "http/routes/http_test_util.h"
#include "http/routes/metrics_text.h"
#include "serve/request/prompt_assembly.h"

namespace tandem::http {
namespace {

TEST(Auth, BearerOrXApiKey) {
  EXPECT_TRUE(authorized("", "", ""));
  EXPECT_TRUE(authorized("k1", "Bearer k1", ""));
  EXPECT_TRUE(authorized("k1", "", "k1"));
  EXPECT_FALSE(authorized("k1", "", ""));
  EXPECT_FALSE(authorized("k1", "Bearer k2", ""));
  EXPECT_FALSE(authorized("k1", "Bearer k1x", ""));
  EXPECT_FALSE(authorized("k1", "Bearer ", ""));
  EXPECT_FALSE(authorized("k1", "k1", ""));
  EXPECT_TRUE(is_public_path("/health"));
  EXPECT_FALSE(is_public_path("/metrics"));
}

TEST(RequestParse, UserStartsOfRawPrompts) {
  const text::Tokenizer& tok = *testing::TinyModel::get().tok;
  const std::string p = "<|im_start|>system\nrules<|im_end|>\n<|im_start|>user\nfirst<|im_end|>\n"
                        "<|im_start|>assistant\nok<|im_end|>\n<|im_start|>user\nsecond<|im_end|>\n<|im_start|>assistant\n";
  const std::vector<int32_t> ids = tok.encode(p);
  const std::vector<int64_t> starts = serve::find_user_starts(tok, ids);
  ASSERT_EQ(starts.size(), 2u);
  for (int64_t s : starts) {
    std::string role;
    for (size_t k = static_cast<size_t>(s); k < ids.size() && role.size() < 17; ++k) tok.append_token(role, ids[k]);
    EXPECT_EQ(role.rfind("<|im_start|>user", 0), 0u) << role;
  }
  EXPECT_TRUE(serve::find_user_starts(tok, tok.encode("no chat here")).empty());
}

TEST(MetricsText, EveryLineIsAPrometheusSampleOrComment) {
  serve::EngineSnapshot s;
  s.slots.resize(2);
  s.slots[1].id = 1;
  s.slots[1].phase = serve::SlotPhase::Generating;
  s.totals.requests = 3;
  s.totals.decode_ms = 30;
  s.totals.tokens_generated = 10;
  const std::string t = prometheus_text(s);
  size_t pos = 0, samples = 0;
  while (pos < t.size()) {
    const size_t end = t.find('\n', pos);
    ASSERT_NE(end, std::string::npos);
    const std::string line = t.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    ++samples;
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(sp + 1))) << line;
    EXPECT_EQ(line.rfind("tandem_", 0), 0u) << line;
  }
  EXPECT_GT(samples, 40u);
  EXPECT_NE(t.find("tandem_slot_state{slot=\"1\",state=\"generating\"} 1"), std::string::npos);
  EXPECT_NE(t.find("tandem_request_ms_per_output_token 3\n"), std::string::npos);
}

}  // namespace
}  // namespace tandem::http
