// The lifecycle over HTTP (issue 27 items 1 and 2): llama.cpp's slot actions (POST
// /slots/{id}?action=save|restore|erase) and their errors; a server restarted on the same
// --state-dir restores the rules at its first agent step (timings.cache_n, prompt_cache_loaded)
// and answers exactly as an uninterrupted one; an idle unload and the reload (/props lifecycle,
// /metrics, timings.cold_start_ms).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "http/routes/http_test_util.h"
#include "model/test_support.h"

namespace tandem::http {
namespace {

using namespace testing;
namespace fs = std::filesystem;

using test_support::TempDir;


// An agent step: the same rules, a growing history, a new screen.
Json step(int k) {
  std::string hist;
  for (int i = 0; i < k; ++i) hist += " step " + std::to_string(i) + ": tapped [" + std::to_string(i * 3) + "]";
  return Json{{"model", "any-name"},
              {"messages", Json::array({Json{{"role", "system"}, {"content", "You are a phone agent. One JSON action per step."}},
                                        Json{{"role", "user"},
                                             {"content", "Task: open the camera. History:" + hist + " Screen: [" +
                                                             std::to_string(k * 3) + "] Camera [4] Gallery"}}})},
              {"max_tokens", 6},
              {"temperature", 0},
              {"logprobs", true},
              {"top_logprobs", 3}};
}

Json chat(httplib::Client& c, const Json& body) {
  const auto r = c.Post("/v1/chat/completions", to_text(body), "application/json");
  EXPECT_TRUE(r);
  if (!r) return Json();
  EXPECT_EQ(r->status, 200) << r->body;
  return Json::parse(r->body);
}

serve::EngineConfig with_dir(const fs::path& dir) {
  serve::EngineConfig c = small_engine();
  c.state_dir = dir.string();
  return c;
}

TEST(HttpLifecycle, ARestartedServerRestoresTheRulesAndAnswersTheSame) {
  std::vector<Json> uninterrupted;
  {
    TestServer s(small_engine());
    auto c = s.client();
    for (int k = 0; k < 4; ++k) uninterrupted.push_back(chat(*c, step(k)));
  }
  TempDir dir("tandem-http-restart");
  {
    TestServer s(with_dir(dir.path));
    auto c = s.client();
    for (int k = 0; k < 3; ++k) chat(*c, step(k));
  }  // the server stops: its states go to the directory
  TestServer s(with_dir(dir.path));
  auto c = s.client();
  const Json props = parse_body(c->Get("/props"));
  EXPECT_GE(props["lifecycle"]["state_files_loaded"].get<int>(), 1);
  const Json r = chat(*c, step(3));
  const Json& ref = uninterrupted[3];
  EXPECT_TRUE(r["timings"]["prompt_cache_loaded"].get<bool>());
  EXPECT_EQ(r["timings"]["checkpoints_restored"], 1);
  EXPECT_EQ(r["timings"]["cache_n"], ref["timings"]["cache_n"]);
  EXPECT_GT(r["timings"]["cache_n"].get<int>(), 0);
  EXPECT_EQ(r["choices"][0]["message"]["content"], ref["choices"][0]["message"]["content"]);
  EXPECT_EQ(r["choices"][0]["logprobs"], ref["choices"][0]["logprobs"]);  // bit for bit, as JSON numbers
  EXPECT_EQ(r["model"], "any-name");
}

TEST(HttpLifecycle, SlotSaveRestoreEraseAndTheirErrors) {
  TempDir dir("tandem-http-slots");
  TestServer s(with_dir(dir.path));
  auto c = s.client();
  chat(*c, step(0));
  const int cached = parse_body(c->Get("/slots"))[0]["n_cached"].get<int>();
  ASSERT_GT(cached, 0);

  const Json saved = parse_body(c->Post("/slots/0?action=save", to_text(Json{{"filename", "a.bin"}}), "application/json"));
  EXPECT_EQ(saved["id_slot"], 0);
  EXPECT_EQ(saved["filename"], "a.bin");
  EXPECT_EQ(saved["n_saved"], cached);
  EXPECT_EQ(saved["n_written"].get<uint64_t>(), fs::file_size(dir.path / "a.bin"));
  EXPECT_TRUE(saved["timings"].contains("save_ms"));
  const Json erased = parse_body(c->Post("/slots/0?action=erase", "", "application/json"));
  EXPECT_EQ(erased["n_erased"], cached);
  EXPECT_EQ(parse_body(c->Get("/slots"))[0]["n_cached"], 0);
  const Json restored = parse_body(c->Post("/slots/0?action=restore", to_text(Json{{"filename", "a.bin"}}), "application/json"));
  EXPECT_EQ(restored["n_restored"], cached);
  EXPECT_EQ(restored["n_read"], saved["n_written"]);
  EXPECT_EQ(parse_body(c->Get("/slots"))[0]["n_cached"], cached);

  const auto status = [&](const std::string& path, const Json& body) {
    const auto r = c->Post(path.c_str(), to_text(body), "application/json");
    EXPECT_TRUE(r);
    if (r && r->status != 200) {
      EXPECT_TRUE(Json::parse(r->body).contains("error")) << r->body;
    }
    return r ? r->status : 0;
  };
  EXPECT_EQ(status("/slots/0?action=fly", Json{{"filename", "a.bin"}}), 400);
  EXPECT_EQ(status("/slots/7?action=erase", Json::object()), 400);
  EXPECT_EQ(status("/slots/x?action=erase", Json::object()), 400);
  EXPECT_EQ(status("/slots/0abc?action=erase", Json::object()), 400);
  EXPECT_EQ(status("/slots/0?action=save", Json::object()), 400);
  EXPECT_EQ(status("/slots/0?action=save", Json{{"filename", "../../etc/x"}}), 400);
  EXPECT_EQ(status("/slots/0?action=restore", Json{{"filename", "none.bin"}}), 400);
  {
    std::FILE* f = std::fopen((dir.path / "bad.bin").c_str(), "wb");
    std::fputs("garbage", f);
    std::fclose(f);
  }
  const auto bad = c->Post("/slots/0?action=restore", to_text(Json{{"filename", "bad.bin"}}), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("bad.bin"), std::string::npos) << bad->body;
  // The slot kept its state through the refused restore and still serves.
  EXPECT_EQ(parse_body(c->Get("/slots"))[0]["n_cached"], cached);
  chat(*c, step(1));
}

TEST(HttpLifecycle, SaveAndRestoreNeedAStateDir) {
  TestServer s(small_engine());
  auto c = s.client();
  const auto r = c->Post("/slots/0?action=save", to_text(Json{{"filename", "a.bin"}}), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("--state-dir"), std::string::npos) << r->body;
}

TEST(HttpLifecycle, IdleUnloadAndReloadAreReported) {
  serve::EngineConfig cfg = small_engine();
  cfg.unload_idle_ms = 150;
  TestServer s(cfg);
  auto c = s.client();
  const Json first = chat(*c, step(0));
  EXPECT_EQ(first["timings"]["cold_start_ms"], 0.0);
  ASSERT_TRUE(wait_until([&] { return !s.engine->snapshot().lifecycle.weights_loaded; }));
  const Json props = parse_body(c->Get("/props"));
  EXPECT_FALSE(props["lifecycle"]["weights_loaded"].get<bool>());
  EXPECT_EQ(props["lifecycle"]["unloads"], 1);
  EXPECT_NE(parse_body(c->Get("/health"))["status"], nullptr);  // /health answers while unloaded
  const auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("tandem_model_loaded 0"), std::string::npos);
  const Json second = chat(*c, step(1));
  EXPECT_GT(second["timings"]["cold_start_ms"].get<double>(), 0.0);
  const Json after = parse_body(c->Get("/props"));
  EXPECT_EQ(after["lifecycle"]["reloads"], 1);
  EXPECT_GT(after["lifecycle"]["cold_start_parts_ms"]["map"].get<double>(), 0.0);
}

}  // namespace
}  // namespace tandem::http
