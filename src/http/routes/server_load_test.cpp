// Greedy outputs through HTTP do not depend on the checkpoint policy, consolidation or the path a
// slot takes to its state (live continuation, checkpoint restore, prompt-cache load, fresh
// prefill); and 4 slots under 32 concurrent requests, 4 of which hang up mid-stream, answer every
// other request exactly as it is answered alone, then return to idle memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>

#include "http/routes/http_test_util.h"
#include "http/transport/memory_policy.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;
using namespace std::chrono_literals;

// An agent-like sequence: fixed rules, a task, a sliding window of the last actions, a new screen
// each step; then a second task; a repeat; an unrelated request; back to the second task.
std::vector<Json> agent_conversations() {
  const std::string rules =
      "You are a phone agent. Answer with one JSON action: tap(index), type(text), swipe(dir), back, home, "
      "done. Never explain. Use the indexes of the screen below.";
  const std::vector<std::string> actions = {"tap 3", "type \"weather\"", "tap 1", "swipe up", "tap 7", "back", "tap 2"};
  std::vector<Json> out;
  auto step = [&](const std::string& task, int k, const std::string& screen) {
    std::string hist;
    for (int i = std::max(0, k - 3); i < k; ++i) hist += "- " + actions[static_cast<size_t>(i)] + "\n";
    const std::string user = "Task: " + task + "\nHistory:\n" + hist + "Screen:\n" + screen;
    out.push_back(Json::array({Json{{"role", "system"}, {"content", rules}}, Json{{"role", "user"}, {"content", user}}}));
  };
  for (int k = 0; k < 5; ++k)
    step("check the weather in Paris", k, "[" + std::to_string(k) + "] Search  [" + std::to_string(k + 1) + "] Menu  [9] Forecast for day " + std::to_string(k));
  step("send a message to Ana", 0, "[0] Chats [1] New chat [2] Ana");
  step("send a message to Ana", 1, "[0] Ana: see you [1] Type a message");
  out.push_back(out.back());
  out.push_back(Json::array({Json{{"role", "user"}, {"content", "Unrelated: list three colors, briefly please."}}}));
  step("send a message to Ana", 2, "[0] Ana: see you [1] Typed: hello [2] Send");
  return out;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy tokens of a prompt with nothing reused (a fresh state, one forward of the whole prompt).
std::vector<int32_t> greedy_alone(const std::vector<int32_t>& prompt, int n) {
  Qwen35Model& m = *TinyModel::get().model;
  auto st = m.new_sequence(static_cast<int64_t>(prompt.size()) + n + 1);
  ForwardOptions opt;
  ForwardOutput fo;
  m.forward(*st, prompt, opt, fo);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const int32_t t = argmax(fo.logits);
    out.push_back(t);
    if (i + 1 < n) m.forward(*st, std::span<const int32_t>(&t, 1), opt, fo);
  }
  return out;
}

TEST(HttpGreedy, IdenticalWhateverThePolicyConsolidationOrRestorePath) {
  constexpr int kOut = 6;
  const std::vector<Json> convs = agent_conversations();
  std::vector<std::vector<int32_t>> reference;
  std::vector<int32_t> continuation;
  int64_t restored = 0, created = 0, cache_loads = 0, live = 0;
  for (size_t cache_mib : {size_t(0), size_t(64)}) {
    serve::EngineConfig cfg = small_engine(1, 4, 1024);
    cfg.cache_ram_mib = cache_mib;
    cfg.slot.batch = serve::BatchConfig{64, 16, true};  // several passes per prompt
    cfg.slot.ctx_checkpoints = 3;                      // evictions happen
    cfg.policy.divergence.min_gap = 4;
    TestServer s(cfg);
    auto c = s.client();
    for (const char* policy : {"stock", "marconi", "divergence"})
      for (bool consolidate : {false, true}) {
        SCOPED_TRACE(std::string(policy) + (consolidate ? " consolidated" : "") + (cache_mib ? " +cache" : ""));
        auto p = c->Post("/props", to_text(Json{{"checkpoint_policy", policy}, {"consolidate_batches", consolidate}, {"min_gap", 4}}),
                         "application/json");
        ASSERT_TRUE(p);
        ASSERT_EQ(p->status, 200) << p->body;
        for (size_t i = 0; i < convs.size(); ++i) {
          const Json body{{"messages", convs[i]}, {"max_tokens", kOut}, {"temperature", 0}, {"ignore_eos", true}};
          auto r = c->Post("/v1/chat/completions", to_text(body), "application/json");
          ASSERT_TRUE(r);
          ASSERT_EQ(r->status, 200) << r->body;
          const Json j = Json::parse(r->body);
          const Json& t = j["timings"];
          EXPECT_EQ(t["policy"], policy);
          EXPECT_EQ(t["consolidate"], consolidate);
          restored += t["checkpoints_restored"].get<int64_t>();
          created += t["checkpoints_created"].get<int64_t>();
          cache_loads += t["prompt_cache_loaded"].get<bool>() ? 1 : 0;
          const Json rec = s.take_records().back();
          const std::vector<int32_t> out = rec["output"].get<std::vector<int32_t>>();
          ASSERT_EQ(out.size(), static_cast<size_t>(kOut));
          if (reference.size() <= i) reference.push_back(greedy_alone(rec["prompt"].get<std::vector<int32_t>>(), kOut));
          EXPECT_EQ(out, reference[i]) << "conversation " << i;
          if (i != 2) continue;
          // A raw continuation of what the slot holds (prompt + output + more): it continues live.
          std::vector<int32_t> more = rec["prompt"].get<std::vector<int32_t>>();
          more.insert(more.end(), out.begin(), out.end());
          for (int32_t id : TinyModel::get().tok->encode("<|im_end|>\n<|im_start|>user\nand then?")) more.push_back(id);
          auto rc = c->Post("/completion", to_text(Json{{"prompt", more}, {"n_predict", kOut}, {"temperature", 0}, {"ignore_eos", true}}),
                            "application/json");
          ASSERT_TRUE(rc);
          ASSERT_EQ(rc->status, 200) << rc->body;
          const Json jc = Json::parse(rc->body);
          live += jc["timings"]["restore_pos"].get<int64_t>() > 0 && jc["timings"]["checkpoints_restored"] == 0 &&
                          !jc["timings"]["prompt_cache_loaded"].get<bool>()
                      ? 1
                      : 0;
          if (continuation.empty()) continuation = greedy_alone(more, kOut);
          EXPECT_EQ(jc["tokens"].get<std::vector<int32_t>>(), continuation);
        }
      }
  }
  // Every restore path was taken somewhere.
  EXPECT_GT(restored, 0);
  EXPECT_GT(created, 0);
  EXPECT_GT(cache_loads, 0);
  EXPECT_GT(live, 0);
}

struct Job {
  bool chat = true;
  bool stream = false;
  bool hang_up = false;
  int prompt = 0;  // index into the prompts
};

// One request's output tokens (from the SSE stream or the whole answer), or empty on failure.
std::vector<int32_t> run_job(const TestServer& s, const Job& job, const std::vector<std::string>& prompts, int n_out,
                             std::string* text) {
  const std::string& p = prompts[static_cast<size_t>(job.prompt)];
  Json body;
  std::string path;
  if (job.chat) {
    path = "/v1/chat/completions";
    body = Json{{"messages", Json::array({Json{{"role", "user"}, {"content", p}}})}, {"max_tokens", n_out}};
  } else {
    path = "/completion";
    body = Json{{"prompt", "<|im_start|>user\n" + p + "<|im_end|>\n<|im_start|>assistant\n"}, {"n_predict", n_out}};
  }
  body["temperature"] = 0;
  body["ignore_eos"] = true;
  body["stream"] = job.stream;
  auto c = s.client(300);
  auto r = c->Post(path, to_text(body), "application/json");
  if (!r || r->status != 200) {
    *text = r ? "HTTP " + std::to_string(r->status) + ": " + r->body : "no response: " + httplib::to_string(r.error());
    return {};
  }
  std::vector<int32_t> toks;
  if (!job.stream) {
    const Json j = Json::parse(r->body);
    if (job.chat) {
      *text = j["choices"][0]["message"]["content"];
      // The chat answer carries no ids: compare text, and the count.
      toks.assign(static_cast<size_t>(j["usage"]["completion_tokens"].get<int>()), 0);
    } else {
      toks = j["tokens"].get<std::vector<int32_t>>();
      *text = j["content"];
    }
    return toks;
  }
  const auto ev = sse_data(r->body);
  size_t n = 0;
  for (const auto& e : ev) {
    if (e == "[DONE]") continue;
    const Json j = Json::parse(e);
    if (job.chat) {
      if (!j["choices"].empty() && j["choices"][0]["delta"].contains("content"))
        *text += j["choices"][0]["delta"]["content"].get<std::string>();
      if (j.contains("timings")) n = j["timings"]["predicted_n"].get<size_t>();
    } else {
      if (j["stop"].get<bool>()) continue;
      for (const auto& t : j["tokens"]) toks.push_back(t.get<int32_t>());
      *text += j["content"].get<std::string>();
    }
  }
  if (job.chat) toks.assign(n, 0);
  return toks;
}

TEST(HttpLoad, FourSlotsThirtyTwoRequestsFourHangUps) {
  constexpr int kSlots = 4, kRequests = 32, kOut = 8;
  serve::EngineConfig cfg = small_engine(kSlots, /*queue=*/kRequests, /*n_ctx=*/1024);
  TestServer s(cfg);
  std::vector<std::string> prompts;
  for (int i = 0; i < 8; ++i)
    prompts.push_back("Screen " + std::to_string(i % 4) + ": [1] Wi-Fi [2] Bluetooth [3] Display. Step " + std::to_string(i) +
                      (i % 2 ? ": turn it on." : ": open it."));

  // Each request alone (the server otherwise idle): the expected answers.
  std::map<std::pair<int, int>, std::pair<std::vector<int32_t>, std::string>> alone;  // (chat, prompt) -> (tokens, text)
  for (int chat = 0; chat < 2; ++chat)
    for (int p = 0; p < static_cast<int>(prompts.size()); ++p) {
      std::string text;
      auto toks = run_job(s, Job{chat == 1, false, false, p}, prompts, kOut, &text);
      ASSERT_EQ(toks.size(), static_cast<size_t>(kOut));
      alone[{chat, p}] = {toks, text};
    }

  std::vector<Job> jobs;
  for (int i = 0; i < kRequests; ++i) {
    Job j;
    j.chat = i % 2 == 0;
    j.stream = i % 3 != 0;
    j.prompt = (i * 5) % static_cast<int>(prompts.size());
    j.hang_up = i % 8 == 3;  // 4 of them
    if (j.hang_up) j.stream = true;
    jobs.push_back(j);
  }
  const auto run_round = [&](bool check) {
    std::vector<std::thread> th;
    std::atomic<int> failures{0};
    for (const Job& job : jobs)
      th.emplace_back([&, job] {
        if (job.hang_up) {
          RawClient raw(s.port);
          const Json body{{"messages", Json::array({Json{{"role", "user"}, {"content", prompts[static_cast<size_t>(job.prompt)]}}})},
                          {"n_predict", -1}, {"ignore_eos", true}, {"temperature", 0}, {"stream", true}};
          if (!raw.post("/v1/chat/completions", to_text(body)) || !raw.read_until("\"delta\":{\"content\"", 300s)) ++failures;
          return;  // hangs up
        }
        std::string text;
        const auto toks = run_job(s, job, prompts, kOut, &text);
        const auto& want = alone.at({job.chat ? 1 : 0, job.prompt});
        if (!check) return;
        if (toks.size() != want.first.size() || (!job.chat && toks != want.first) || text != want.second) {
          ++failures;
          ADD_FAILURE() << "request (chat " << job.chat << ", stream " << job.stream << ", prompt " << job.prompt
                        << ") answered differently from alone: " << toks.size() << " tokens, text '" << text << "' vs '"
                        << want.second << "'";
        }
      });
    for (auto& t : th) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_TRUE(wait_until([&] { return all_slots_idle(*s.engine); }, 120s));
  };

  // A first round warms up allocator arenas and HTTP threads; the second is measured.
  run_round(false);
  const size_t rss_before = process_rss_bytes();
  const auto snap0 = s.engine->snapshot();
  run_round(true);
  const auto snap = s.engine->snapshot();
  EXPECT_EQ(snap.cancelled - snap0.cancelled, 4u);
  EXPECT_EQ(snap.completed - snap0.completed, static_cast<uint64_t>(kRequests - 4));
  EXPECT_EQ(snap.failed, 0u);
  EXPECT_EQ(snap.rejected, 0u);
  for (const auto& sl : snap.slots) EXPECT_EQ(sl.phase, serve::SlotPhase::Idle);
  EXPECT_EQ(snap.queued, 0);
  EXPECT_LE(snap.prompt_cache_bytes, snap.prompt_cache_budget_bytes);

  auto h = s.client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);

  const size_t rss_after = process_rss_bytes();
#if defined(__SANITIZE_ADDRESS__)
  const size_t tolerance = size_t(256) << 20;  // ASan's quarantine holds freed memory; LSan checks leaks
#else
  const size_t tolerance = size_t(32) << 20;
#endif
  EXPECT_LE(rss_after, rss_before + tolerance) << "RSS " << (rss_before >> 20) << " MiB -> " << (rss_after >> 20) << " MiB";
}

}  // namespace
}  // namespace tandem::http
