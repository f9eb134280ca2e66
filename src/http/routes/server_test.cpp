// End to end through HTTP on 127.0.0.1 with the tiny generated model: chat and completion,
// whole and streamed, the bad-input / auth / overload answers, cancel by disconnect, deadlines.
#include "http/routes/server.h"

#include <gtest/gtest.h>

#include <set>

#include "http/routes/http_test_util.h"
#include "serve/settings/serving_settings.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;
using namespace std::chrono_literals;

Json chat_body(const std::string& user, int max_tokens = 6, bool stream = false) {
  return Json{{"model", "tiny"},
              {"messages", Json::array({Json{{"role", "system"}, {"content", "You operate a phone."}},
                                        Json{{"role", "user"}, {"content", user}}})},
              {"max_tokens", max_tokens},
              {"temperature", 0},
              {"stream", stream}};
}


TEST(HttpServer, HealthModelsPropsTokenize) {
  TestServer s(small_engine());
  auto c = s.client();
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(Json::parse(h->body)["status"], "ok");

  const Json models = parse_body(c->Get("/v1/models"));
  EXPECT_EQ(models["data"][0]["id"], "tiny");

  const Json props = parse_body(c->Get("/props"));
  EXPECT_EQ(props["total_slots"], 1);
  EXPECT_EQ(props["serving"]["checkpoint_policy"], "divergence");

  const Json tok = parse_body(c->Post("/tokenize", to_text(Json{{"content", "<|im_start|>user\nhello"}}), "application/json"));
  ASSERT_TRUE(tok["tokens"].is_array());
  ASSERT_GT(tok["tokens"].size(), 2u);
  const Json detok = parse_body(c->Post("/detokenize", to_text(Json{{"tokens", tok["tokens"]}}), "application/json"));
  EXPECT_EQ(detok["content"], "<|im_start|>user\nhello");
  const Json pieces =
      parse_body(c->Post("/tokenize", to_text(Json{{"content", "hi"}, {"with_pieces", true}}), "application/json"));
  ASSERT_TRUE(pieces["tokens"][0].contains("piece"));
}

TEST(HttpServer, ChatCompletionReportsUsageAndEveryServingNumber) {
  TestServer s(small_engine());
  auto c = s.client();
  auto r = c->Post("/v1/chat/completions", to_text(chat_body("Open the settings app.")), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0]["message"]["content"].is_string());
  const std::string fr = j["choices"][0]["finish_reason"];
  EXPECT_TRUE(fr == "stop" || fr == "length") << fr;
  const Json& u = j["usage"];
  EXPECT_GT(u["prompt_tokens"].get<int>(), 5);
  EXPECT_EQ(u["total_tokens"].get<int>(), u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 0);
  const Json& t = j["timings"];
  for (const char* k : {"cache_n", "prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n",
                        "predicted_ms", "predicted_per_token_ms", "predicted_per_second", "n_prompt", "lcp", "restore_pos",
                        "new_tokens", "kv_bound", "passes", "pass_sizes", "checkpoints_restored", "checkpoints_created",
                        "checkpoints_evicted", "bytes_copied", "prefill_ms", "decode_ms", "tokens_generated",
                        "ms_per_output_token", "drafts_proposed", "drafts_accepted"})
    EXPECT_TRUE(t.contains(k)) << k;
  EXPECT_EQ(t["prompt_n"], u["prompt_tokens"]);
  EXPECT_EQ(t["predicted_n"], u["completion_tokens"]);

  // The same conversation again: the slot reuses what it holds (cached_tokens = R).
  auto r2 = c->Post("/v1/chat/completions", to_text(chat_body("Open the settings app.")), "application/json");
  ASSERT_TRUE(r2);
  const Json j2 = Json::parse(r2->body);
  EXPECT_EQ(j2["choices"][0]["message"]["content"], j["choices"][0]["message"]["content"]);
  EXPECT_EQ(j2["timings"]["lcp"], j2["timings"]["n_prompt"]);
  EXPECT_EQ(j2["usage"]["prompt_tokens_details"]["cached_tokens"], j2["timings"]["restore_pos"]);
}

TEST(HttpServer, ChatStreamingMatchesTheWholeAnswer) {
  TestServer s(small_engine());
  auto c = s.client();
  const Json whole = parse_body(c->Post("/v1/chat/completions", to_text(chat_body("Tap the search field.", 8)), "application/json"));
  Json body = chat_body("Tap the search field.", 8, true);
  body["stream_options"] = Json{{"include_usage", true}};
  auto r = c->Post("/v1/chat/completions", to_text(body), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::vector<std::string> ev = sse_data(r->body);
  ASSERT_GE(ev.size(), 4u);
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  std::string finish;
  bool saw_role = false, saw_usage = false;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    const Json e = Json::parse(ev[i]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (e["choices"].empty()) {
      saw_usage = true;
      EXPECT_EQ(e["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
      continue;
    }
    const Json& d = e["choices"][0]["delta"];
    if (d.contains("role")) saw_role = true;
    if (d.contains("content")) text += d["content"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) {
      finish = e["choices"][0]["finish_reason"];
      EXPECT_TRUE(e.contains("timings"));
    }
  }
  EXPECT_TRUE(saw_role);
  EXPECT_TRUE(saw_usage);
  EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
}

TEST(HttpServer, CompletionStringOrTokenIdsWithLlamaTimings) {
  TestServer s(small_engine());
  auto c = s.client();
  const std::string prompt = "<|im_start|>user\nOpen the camera<|im_end|>\n<|im_start|>assistant\n";
  const Json a = parse_body(c->Post("/completion", to_text(Json{{"prompt", prompt}, {"n_predict", 7}, {"temperature", 0}}),
                               "application/json"));
  ASSERT_TRUE(a.contains("content")) << a;
  EXPECT_EQ(a["tokens"].size(), 7u);
  EXPECT_EQ(a["stop_type"], "limit");
  EXPECT_EQ(a["tokens_predicted"], 7);
  for (const char* k : {"cache_n", "prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "predicted_per_token_ms",
                        "prompt_per_token_ms", "prompt_per_second", "predicted_per_second", "new_tokens", "kv_bound"})
    EXPECT_TRUE(a["timings"].contains(k)) << k;

  const Json ids = parse_body(c->Post("/tokenize", to_text(Json{{"content", prompt}}), "application/json"));
  const Json b = parse_body(c->Post("/completion",
                               to_text(Json{{"prompt", ids["tokens"]}, {"n_predict", 7}, {"temperature", 0}, {"cache_prompt", true}}),
                               "application/json"));
  EXPECT_EQ(b["tokens"], a["tokens"]);
  EXPECT_EQ(b["content"], a["content"]);
  EXPECT_EQ(b["tokens_evaluated"], ids["tokens"].size());
  // Same prompt, same slot: everything but the last prompt token is reused, or a checkpoint is.
  EXPECT_EQ(b["timings"]["lcp"], b["timings"]["n_prompt"]);

  // Streamed: the token ids of the chunks are the whole answer's; the last event has stop and timings.
  auto r = c->Post("/completion", to_text(Json{{"prompt", prompt}, {"n_predict", 7}, {"temperature", 0}, {"stream", true}}),
                   "application/json");
  ASSERT_TRUE(r);
  const auto ev = sse_data(r->body);
  ASSERT_GE(ev.size(), 2u);
  std::vector<int32_t> toks;
  std::string text;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    const Json e = Json::parse(ev[i]);
    EXPECT_FALSE(e["stop"].get<bool>());
    for (const auto& t : e["tokens"]) toks.push_back(t.get<int32_t>());
    text += e["content"].get<std::string>();
  }
  const Json last = Json::parse(ev.back());
  EXPECT_TRUE(last["stop"].get<bool>());
  EXPECT_TRUE(last.contains("timings"));
  EXPECT_EQ(Json(toks), a["tokens"]);
  EXPECT_EQ(text, a["content"]);
}

TEST(HttpServer, StopStringsAndEndOfGeneration) {
  TestServer s(small_engine());
  auto c = s.client();
  const std::string prompt = "Hello there";
  const Json a = parse_body(c->Post("/completion", to_text(Json{{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}, {"ignore_eos", true}}),
                               "application/json"));
  const std::string full = a["content"];
  // A stop string taken from the middle of the greedy output ends it there.
  if (full.size() >= 4) {
    const std::string stop = full.substr(2, 2);
    const Json b = parse_body(c->Post("/completion",
                                 to_text(Json{{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}, {"ignore_eos", true}, {"stop", Json::array({stop})}}),
                                 "application/json"));
    EXPECT_EQ(b["stop_type"], "word");
    EXPECT_EQ(b["stopping_word"], stop);
    EXPECT_EQ(b["content"], full.substr(0, full.find(stop)));
  }
}

struct BadCase {
  const char* path;
  std::string body;
  const char* says;  // a piece of the message
};

TEST(HttpServer, BadInputIs400AndTheServerKeepsServing) {
  TestServer s(small_engine(1, 8, 256));
  auto c = s.client();
  const std::string long_text(2000, 'x');
  const std::vector<BadCase> cases = {
      {"/v1/chat/completions", "{\"messages\": [", "not valid JSON"},
      {"/v1/chat/completions", "[1, 2]", "JSON object"},
      {"/v1/chat/completions", "{\"model\": \"tiny\"}", "missing 'messages'"},
      {"/v1/chat/completions", "{\"messages\": []}", "'messages' is empty"},
      {"/v1/chat/completions", "{\"messages\": \"hi\"}", "'messages' must be an array"},
      {"/v1/chat/completions", "{\"messages\": [42]}", "not an object"},
      {"/v1/chat/completions", "{\"messages\": [{\"content\": \"hi\"}]}", "role"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"temperature\": \"hot\"}",
       "'temperature' must be a number"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stream\": \"yes\"}",
       "'stream' must be a boolean"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 1.5}",
       "'max_tokens' must be an integer"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 0}",
       "'max_tokens' must be in"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stop\": 5}", "'stop'"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"n\": 3}", "'n' must be 1"},
      {"/v1/chat/completions", "{\"model\": 9, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}",
       "'model' must be a string"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"id_slot\": 7}",
       "id_slot 7 does not exist"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + long_text + "\"}]}",
       "context"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"caf\xc3\x28\"}]}", "not valid JSON"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\\ud800\"}]}", "not valid JSON"},
      {"/completion", "{}", "missing 'prompt'"},
      {"/completion", "{\"prompt\": \"\"}", "'prompt' is empty"},
      {"/completion", "{\"prompt\": 12}", "'prompt' must be"},
      {"/completion", "{\"prompt\": [1, 2, 999999]}", "outside the vocabulary"},
      {"/completion", "{\"prompt\": [1, -2]}", "outside the vocabulary"},
      {"/completion", "{\"prompt\": [[1, 2], [3]]}", "several prompts"},
      {"/completion", "{\"prompt\": \"hi\", \"n_predict\": -2}", "'n_predict' must be in"},
      {"/completion", "{\"prompt\": \"hi\", \"n_predict\": 100000}", "'n_predict' must be in"},
      {"/completion", "{\"prompt\": \"hi\", \"n_predict\": \"many\"}", "'n_predict' must be an integer"},
      {"/completion", "{\"prompt\": \"hi\", \"top_p\": 7}", "'top_p' must be in"},
      {"/completion", "{\"prompt\": \"hi\", \"id_slot\": 1}", "id_slot 1 does not exist"},
      {"/completion", "{\"prompt\": \"" + long_text + "\"}", "context"},
      {"/completion", "{\"prompt\": \"\xff\xfe\"}", "not valid JSON"},
      {"/tokenize", "{\"content\": 5}", "'content' must be a string"},
      {"/tokenize", "{}", "missing 'content'"},
      {"/detokenize", "{\"tokens\": [1, 1000000]}", "outside the vocabulary"},
      {"/detokenize", "{\"tokens\": \"abc\"}", "'tokens' must be an array"},
      {"/props", "{\"checkpoint_policy\": \"lru\"}", "stock"},
      {"/props", "{\"min_gap\": -1}", "'min_gap' (--min-gap): expected a value in [0, "},
      {"/props", "{\"speed\": 11}", "unknown setting 'speed'"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"tools\": " +
                                   std::string(100000, '[') + std::string(100000, ']') + "}",
       "nests deeper"},
  };
  for (const BadCase& bc : cases) {
    SCOPED_TRACE(std::string(bc.path) + " " + bc.body.substr(0, 120));
    auto r = c->Post(bc.path, bc.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    Json e;
    ASSERT_NO_THROW(e = Json::parse(r->body)) << r->body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_EQ(e["error"]["code"], 400);
    EXPECT_NE(e["error"]["message"].get<std::string>().find(bc.says), std::string::npos) << e["error"]["message"];
  }
  auto nf = c->Get("/v2/nothing");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_EQ(Json::parse(nf->body)["error"]["type"], "not_found_error");

  // Still serving, and nothing ran on the slot.
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto ok = c->Post("/v1/chat/completions", to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(s.engine->snapshot().failed, 0u);
}

TEST(HttpServer, ApiKeyIsRequiredExceptForHealth) {
  TestServer s(small_engine(), "sekrit");
  auto c = s.client();
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  for (const char* path : {"/slots", "/metrics", "/v1/models", "/props"}) {
    auto r = c->Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(Json::parse(r->body)["error"]["type"], "authentication_error");
  }
  auto none = c->Post("/v1/chat/completions", to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  httplib::Headers wrong = {{"Authorization", "Bearer nope"}};
  auto bad = c->Post("/v1/chat/completions", wrong, to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 401);
  httplib::Headers right = {{"Authorization", "Bearer sekrit"}};
  auto good = c->Post("/v1/chat/completions", right, to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  auto m = c->Get("/metrics", right);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
}

// A streamed request that would run until the context is full.
std::string endless_completion(bool stream) {
  return to_text(Json{{"prompt", "Count forever:"}, {"n_predict", -1}, {"ignore_eos", true}, {"temperature", 0}, {"stream", stream}});
}

TEST(HttpServer, OverloadIs503NotAHang) {
  TestServer s(small_engine(/*parallel=*/1, /*queue=*/0, /*n_ctx=*/4096));
  RawClient hog(s.port);
  ASSERT_TRUE(hog.ok());
  ASSERT_TRUE(hog.post("/completion", endless_completion(true)));
  ASSERT_TRUE(hog.read_until("data: "));  // generating
  auto c = s.client(10);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c->Post("/v1/chat/completions", to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(Json::parse(r->body)["error"]["type"], "unavailable_error");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  hog.close();
  ASSERT_TRUE(wait_until([&] { return all_slots_idle(*s.engine); }));
  auto again = c->Post("/v1/chat/completions", to_text(chat_body("hi", 2)), "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(s.engine->snapshot().rejected, 1u);
}

TEST(HttpServer, QueuedRequestsWaitForTheSlot) {
  TestServer s(small_engine(/*parallel=*/1, /*queue=*/4));
  std::vector<std::thread> th;
  std::vector<int> status(4, 0);
  for (int i = 0; i < 4; ++i)
    th.emplace_back([&, i] {
      auto c = s.client();
      auto r = c->Post("/v1/chat/completions", to_text(chat_body("request " + std::to_string(i), 4)), "application/json");
      status[static_cast<size_t>(i)] = r ? r->status : -1;
    });
  for (auto& t : th) t.join();
  for (int st : status) EXPECT_EQ(st, 200);
}

TEST(HttpServer, StreamingClientThatHangsUpCancelsItsGeneration) {
  TestServer s(small_engine(1, 4, 4096));
  {
    RawClient raw(s.port);
    ASSERT_TRUE(raw.post("/v1/chat/completions",
                         to_text(Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "go"}}})},
                                      {"ignore_eos", true}, {"temperature", 0}, {"stream", true}})));
    ASSERT_TRUE(raw.read_until("\"delta\":{\"content\""));
  }  // hang up
  ASSERT_TRUE(wait_until([&] { return all_slots_idle(*s.engine) && s.engine->snapshot().cancelled == 1; }));
  const auto rec = s.take_records();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["finish"], "cancelled");
  EXPECT_LT(rec[0]["output"].size(), 4000u);
  // The slot serves the next request.
  auto r = s.client()->Post("/v1/chat/completions", to_text(chat_body("next", 3)), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, NonStreamingClientThatHangsUpCancelsItsGeneration) {
  TestServer s(small_engine(1, 4, 4096));
  {
    RawClient raw(s.port);
    ASSERT_TRUE(raw.post("/completion", endless_completion(false)));
    ASSERT_TRUE(wait_until([&] {
      const auto snap = s.engine->snapshot();
      return snap.slots[0].phase == serve::SlotPhase::Generating && snap.slots[0].n_generated > 2;
    }));
  }
  ASSERT_TRUE(wait_until([&] { return all_slots_idle(*s.engine) && s.engine->snapshot().cancelled == 1; }));
  const auto rec = s.take_records();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["finish"], "cancelled");
  EXPECT_LT(rec[0]["output"].size(), 4000u);
}

TEST(HttpServer, DeadlinesEndGenerationAndQueueWaits) {
  TestServer s(small_engine(1, 4, 4096));
  auto c = s.client();
  // Generation past its deadline: the partial answer, finish_reason "timeout".
  auto r = c->Post("/completion",
                   to_text(Json{{"prompt", "Count forever:"}, {"n_predict", -1}, {"ignore_eos", true}, {"timeout_ms", 100}}),
                   "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_EQ(j["stop_type"], "timeout");
  EXPECT_LT(j["tokens"].size(), 4000u);

  // Waiting in the queue past the deadline: 503.
  RawClient hog(s.port);
  ASSERT_TRUE(hog.post("/completion", endless_completion(true)));
  ASSERT_TRUE(hog.read_until("data: "));
  auto q = c->Post("/v1/chat/completions",
                   to_text(Json{{"messages", Json::array({Json{{"role", "user"}, {"content", "hi"}}})}, {"timeout_ms", 50}}),
                   "application/json");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 503) << q->body;
  EXPECT_NE(Json::parse(q->body)["error"]["message"].get<std::string>().find("waiting for a slot"), std::string::npos);
  hog.close();
  ASSERT_TRUE(wait_until([&] { return all_slots_idle(*s.engine); }));
  EXPECT_EQ(s.engine->snapshot().timed_out, 2u);
}

TEST(HttpServer, SlotsAndMetricsDescribeTheEngine) {
  TestServer s(small_engine(2, 4));
  auto c = s.client();
  ASSERT_EQ(c->Post("/v1/chat/completions", to_text(chat_body("one", 3)), "application/json")->status, 200);
  const Json slots = parse_body(c->Get("/slots"));
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["state"], "idle");
  EXPECT_GT(slots[0]["kv_bytes"].get<int64_t>(), 0);
  auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  for (const char* name :
       {"tandem_request_count_total 1", "tandem_request_prompt_tokens_total", "tandem_request_lcp_tokens_total",
        "tandem_request_restore_pos_tokens_total", "tandem_request_new_tokens_total", "tandem_request_kv_bound_tokens_total",
        "tandem_request_passes_total", "tandem_request_checkpoints_restored_total", "tandem_request_checkpoints_created_total",
        "tandem_request_checkpoints_evicted_total", "tandem_request_bytes_copied_total", "tandem_request_prefill_seconds_total",
        "tandem_request_decode_seconds_total", "tandem_request_tokens_generated_total", "tandem_request_ms_per_output_token",
        "tandem_request_drafts_proposed_total", "tandem_request_drafts_accepted_total",
        "tandem_slot_state{slot=\"1\",state=\"idle\"} 1", "tandem_prompt_cache_bytes", "tandem_prompt_cache_budget_bytes 67108864",
        "tandem_kv_bytes", "tandem_recurrent_bytes", "tandem_speculation_bytes 0", "tandem_model_packed_weight_bytes 0", "tandem_governor_releases_total", "tandem_governor_reacquires_total",
        "tandem_governor_released_seconds_total", "tandem_governor_last_wake_latency_ms",
        "tandem_governor_max_wake_latency_ms", "tandem_requests_finished_total{outcome=\"completed\"} 1"})
    EXPECT_NE(m->body.find(name), std::string::npos) << name;

  // Run-time switch.
  const Json p = parse_body(c->Post("/props", to_text(Json{{"checkpoint_policy", "marconi"}, {"consolidate_batches", false}}),
                               "application/json"));
  EXPECT_EQ(p["serving"]["checkpoint_policy"], "marconi");
  EXPECT_EQ(p["serving"]["consolidate_batches"], false);
  const Json after = parse_body(c->Post("/v1/chat/completions", to_text(chat_body("two", 2)), "application/json"));
  EXPECT_EQ(after["timings"]["policy"], "marconi");
  EXPECT_EQ(after["timings"]["consolidate"], false);
}

// GET /props "settings": every row of the serving-settings table with the value the engine runs
// (run-time switches included), its default, and whether it changes counts / is an ablation.
TEST(HttpServer, PropsReportsTheServingSettingsTable) {
  const serve::EngineConfig cfg = small_engine();
  TestServer s(cfg);
  auto c = s.client();
  const Json settings = parse_body(c->Get("/props"))["settings"];
  ASSERT_EQ(settings.size(), serve::serving_settings().size());
  for (const auto& r : serve::serving_settings()) {
    SCOPED_TRACE(r.long_name());
    ASSERT_TRUE(settings.contains(r.key()));
    EXPECT_EQ(settings[r.key()]["value"], r.get(cfg));
    EXPECT_EQ(settings[r.key()]["default"], r.get(serve::EngineConfig{}));
    EXPECT_EQ(settings[r.key()]["changes_counts"], r.changes_counts);
    EXPECT_EQ(settings[r.key()]["ablation"], r.ablation);
  }
  EXPECT_EQ(settings["ctx-size"]["value"], std::to_string(cfg.n_ctx));
  const Json p = parse_body(c->Post("/props", to_text(Json{{"checkpoint_policy", "stock"}, {"consolidate_batches", false}}),
                               "application/json"));
  EXPECT_EQ(p["settings"]["checkpoint-policy"]["value"], "stock");
  EXPECT_EQ(p["settings"]["consolidate-batches"]["value"], "off");
  EXPECT_EQ(p["settings"]["consolidate-batches"]["default"], "on");
}

}  // namespace
}  // namespace tandem::http
