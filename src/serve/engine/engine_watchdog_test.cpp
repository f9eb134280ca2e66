// The watchdog through the engine (issue 27, item 3) on the tiny generated model: a hang injected
// at the start of a forward pass (or of the vision encoder) through WatchdogConfig::work_hook
//  * fails the stuck request and the queued one with FinishReason::Watchdog, naming the stuck
//    work and its deadline, while the scheduler thread is still blocked;
//  * makes the engine refuse new requests and report the trip (watchdog_status, snapshot);
//  * once the hang is released (the "wait" mode: no exit in a test process), the engine serves
//    again and answers exactly as an engine that never hung.
// The hang is a gate the test opens; the watchdog's deadline is 300 ms and every observation waits
// up to a minute, so load on the machine delays the test but does not fail it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "model/qwen35/qwen35_model.h"
#include "model/test_support.h"
#include "serve/engine/engine.h"
#include "serve/lifecycle/watchdog_test_util.h"
#include "serve/request/request_image.h"
#include "text/tokenizer.h"
#include "vision/multimodal_prompt.h"
#include "vision/vision_generator.h"
#include "vision/vision_model.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;

using testing::OpenOnExit;
using Gate = testing::WatchdogGate;
using test_support::wait_until;

EngineConfig watched(const std::shared_ptr<Gate>& gate, std::vector<WatchdogTrip>* trips = nullptr,
                     std::mutex* trips_mu = nullptr) {
  EngineConfig c;
  c.n_parallel = 1;
  c.n_ctx = 512;
  c.slot.ctx_checkpoints = 4;
  c.images.budget.max_tokens = 16;
  c.watchdog.deadline_ms = 300;
  c.watchdog.per_token_ms = 0;
  c.watchdog.exit_on_trip = false;  // a test process must not exit: "wait" until the gate opens
  c.watchdog.work_hook = [gate](const WorkUnit& u) { gate->hook(u); };
  if (trips)
    c.watchdog.on_trip = [trips, trips_mu](const WatchdogTrip& t) {
      std::lock_guard lk(*trips_mu);
      trips->push_back(t);
    };
  return c;
}

EngineRequest text_request(const text::Tokenizer& tok, const std::string& user, int64_t n_predict = 5) {
  EngineRequest r;
  r.prompt = tok.encode("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n");
  r.user_starts = {0};
  r.params.n_predict = n_predict;
  r.params.ignore_eos = true;
  r.params.sampling.temperature = 0.0f;
  return r;
}

TEST(EngineWatchdog, AHungPassFailsItsRequestAndTheQueueThenTheEngineRecovers) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  auto gate = std::make_shared<Gate>(WorkKind::Pass);
  std::vector<WatchdogTrip> trips;
  std::mutex trips_mu;
  Engine e(*t.model, *t.tok, watched(gate, &trips, &trips_mu));
  OpenOnExit opener{gate};

  const auto stuck = e.submit(text_request(*t.tok, "Open the settings app."));
  ASSERT_TRUE(gate->wait_entered()) << "the request never reached a forward pass";
  const auto queued = e.submit(text_request(*t.tok, "Tap the search field."));  // waits for the one slot
  ASSERT_TRUE(stuck->wait_done(60s)) << "the watchdog did not fail the stuck request";
  const GenerationResult& r = stuck->result();
  EXPECT_EQ(r.reason, FinishReason::Watchdog);
  EXPECT_NE(r.error.find("watchdog: slot 0, request " + std::to_string(stuck->id()) + ": a forward pass of "),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("(prefill) has run for"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("past its deadline of 0.3 s"), std::string::npos) << r.error;
  ASSERT_TRUE(queued->wait_done(60s));
  EXPECT_EQ(queued->result().reason, FinishReason::Watchdog);
  EXPECT_NE(queued->result().error.find("another request's work"), std::string::npos) << queued->result().error;

  // The scheduler is still blocked: the state says what is stuck, new requests are refused.
  const WatchdogStatus w = e.watchdog_status();
  testing::expect_stuck_after_one_trip(w, 2);
  ASSERT_TRUE(w.last);
  EXPECT_EQ(w.last->unit.kind, WorkKind::Pass);
  EXPECT_EQ(w.last->unit.request, stuck->id());
  EXPECT_TRUE(w.last->unit.prefill);
  EXPECT_EQ(w.last->message, r.error);
  try {
    e.submit(text_request(*t.tok, "Go back."));
    ADD_FAILURE() << "a request was accepted while the engine was stuck";
  } catch (const EngineBusy& x) {
    EXPECT_NE(std::string(x.what()).find("watchdog: the engine is stuck"), std::string::npos) << x.what();
  }

  // Released: the pass returns, the scheduler drops the failed (cancelled) requests and serves
  // again, answering as an engine that never hung.
  gate->open();
  ASSERT_TRUE(wait_until([&] { return !e.watchdog_status().tripped; }));
  ASSERT_TRUE(wait_until([&] {
    const EngineSnapshot s = e.snapshot();
    return s.queued == 0 && s.slots[0].phase == SlotPhase::Idle;
  }));
  const auto again = e.submit(text_request(*t.tok, "Tap the search field."));
  ASSERT_TRUE(again->wait_done(120s));
  EXPECT_EQ(again->result().reason, FinishReason::Length);

  EngineConfig plain;
  plain.n_ctx = 512;
  plain.watchdog.deadline_ms = 0;  // off
  Engine ref(*t.model, *t.tok, plain);
  const auto expect = ref.submit(text_request(*t.tok, "Tap the search field."));
  ASSERT_TRUE(expect->wait_done(120s));
  EXPECT_EQ(again->result().output, expect->result().output);
  EXPECT_FALSE(ref.snapshot().watchdog.enabled);

  const EngineSnapshot s = e.snapshot();
  EXPECT_EQ(s.watchdog.trips, 1u);
  EXPECT_FALSE(s.watchdog.tripped);
  std::lock_guard lk(trips_mu);
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_EQ(trips[0].requests_failed, 2);
}

TEST(EngineWatchdog, AHungImageEncodeFailsItsRequest) {
  test_support::TinyModel& t = test_support::TinyModel::get();
  auto gate = std::make_shared<Gate>(WorkKind::Encode);
  Engine e(*t.model, *t.tok, watched(gate), t.vision());
  OpenOnExit opener{gate};

  // "<|im_start|>user\nWhat is on the screen? <image><|im_end|>\n<|im_start|>assistant\n"
  auto img = std::make_shared<vision::RgbImage>();
  img->width = 120;
  img->height = 80;
  img->rgb.resize(static_cast<size_t>(img->width) * img->height * 3);
  std::mt19937 rng(5);
  for (auto& b : img->rgb) b = static_cast<uint8_t>(rng() & 0xff);
  EngineRequest req;
  req.images.push_back(request_image(*img, e.image_params({}), {}));
  const std::string text = std::string("<|im_start|>user\nWhat is on the screen? ") + vision::kDefaultMediaMarker +
                           "<|im_end|>\n<|im_start|>assistant\n";
  flatten_prompt(vision::tokenize_multimodal(e.tokenizer(), text, 1), req.images, req.prompt);
  req.user_starts = {0};
  req.params.n_predict = 3;
  const int64_t rows = static_cast<int64_t>(req.images[0].chunk.nx) * req.images[0].chunk.ny;

  const auto g = e.submit(std::move(req));
  ASSERT_TRUE(gate->wait_entered()) << "the request never reached the encoder";
  ASSERT_TRUE(g->wait_done(60s)) << "the watchdog did not fail the request";
  EXPECT_EQ(g->result().reason, FinishReason::Watchdog);
  EXPECT_NE(g->result().error.find("the vision encoder on an image of " + std::to_string(rows) + " rows (prefill)"),
            std::string::npos)
      << g->result().error;
  const WatchdogStatus w = e.watchdog_status();
  ASSERT_TRUE(w.last);
  EXPECT_EQ(w.last->unit.kind, WorkKind::Encode);
  EXPECT_EQ(w.last->unit.tokens, rows);
  gate->open();
  ASSERT_TRUE(wait_until([&] { return !e.watchdog_status().tripped; }));
}

}  // namespace
}  // namespace tandem::serve
