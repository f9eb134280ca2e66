// Log-probabilities over HTTP (issue 27, item 5) and any model name (item 6), on the tiny model:
// chat logprobs / top_logprobs whole and streamed (the same numbers), /completion n_probs as
// llama.cpp's completion_probabilities, the greedy pick being the first alternative, bad values
// a 400, and a client's own "model" name accepted and echoed.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "http/routes/http_test_util.h"

namespace tandem::http {
namespace {

using namespace testing;

Json chat(bool stream) {
  return Json{{"model", "gpt-4o-mini"},
              {"messages", Json::array({Json{{"role", "user"}, {"content", "Tap Wi-Fi"}}})},
              {"max_tokens", 5},
              {"temperature", 0},
              {"ignore_eos", true},
              {"logprobs", true},
              {"top_logprobs", 3},
              {"stream", stream}};
}


void expect_entry(const Json& e, bool with_id) {
  ASSERT_TRUE(e.contains("token") && e["token"].is_string()) << e.dump();
  ASSERT_TRUE(e.contains("bytes") && e["bytes"].is_array());
  ASSERT_TRUE(e.contains("logprob") && e["logprob"].is_number());
  EXPECT_LE(e["logprob"].get<double>(), 0.0);
  EXPECT_EQ(e.contains("id"), with_id);
  ASSERT_EQ(e["top_logprobs"].size(), 3u);
  double mass = 0;
  for (const Json& t : e["top_logprobs"]) mass += std::exp(t["logprob"].get<double>());
  EXPECT_LE(mass, 1.0 + 1e-6);
  // Greedy: the emitted token is the most probable one.
  EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);
  EXPECT_DOUBLE_EQ(e["top_logprobs"][0]["logprob"].get<double>(), e["logprob"].get<double>());
}

TEST(HttpLogprobs, ChatWholeAndStreamedAgreeAndAnyModelNameIsEchoed) {
  TestServer s(small_engine());
  auto whole = post_json(s, "/v1/chat/completions", chat(false));
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const Json w = Json::parse(whole->body);
  EXPECT_EQ(w["model"], "gpt-4o-mini");
  const Json& content = w["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u);
  for (const Json& e : content) expect_entry(e, /*with_id=*/false);

  auto streamed = post_json(s, "/v1/chat/completions", chat(true));
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  Json all = Json::array();
  for (const std::string& ev : sse_data(streamed->body)) {
    if (ev == "[DONE]") continue;
    const Json c = Json::parse(ev);
    EXPECT_EQ(c["model"], "gpt-4o-mini");
    if (!c["choices"].empty() && c["choices"][0].contains("logprobs") && c["choices"][0]["logprobs"].is_object())
      for (const Json& e : c["choices"][0]["logprobs"]["content"]) all.push_back(e);
  }
  EXPECT_EQ(all, content);  // the same tokens and numbers, piece by piece
}

TEST(HttpLogprobs, CompletionNProbsAndBadValues) {
  TestServer s(small_engine());
  auto r = post_json(s, "/completion", Json{{"prompt", "Tap Wi-Fi"}, {"n_predict", 4}, {"temperature", 0}, {"n_probs", 3}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = Json::parse(r->body);
  ASSERT_EQ(j["completion_probabilities"].size(), j["tokens"].size());
  for (size_t i = 0; i < j["tokens"].size(); ++i) {
    expect_entry(j["completion_probabilities"][i], /*with_id=*/true);
    EXPECT_EQ(j["completion_probabilities"][i]["id"], j["tokens"][i]);
  }
  auto plain = post_json(s, "/completion", Json{{"prompt", "Tap Wi-Fi"}, {"n_predict", 2}});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(Json::parse(plain->body).contains("completion_probabilities"));

  for (const Json& bad : {Json{{"top_logprobs", 3}}, Json{{"logprobs", true}, {"top_logprobs", 21}},
                          Json{{"logprobs", "yes"}}}) {
    Json b = chat(false);
    b.erase("logprobs");
    b.erase("top_logprobs");
    b.update(bad);
    auto e = post_json(s, "/v1/chat/completions", b);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 400) << bad.dump() << " -> " << e->body;
  }
}

}  // namespace
}  // namespace tandem::http
