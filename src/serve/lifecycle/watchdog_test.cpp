// The watchdog alone (serve/lifecycle/watchdog.h), without an engine: the heartbeat's units and allowances,
// a unit held past its deadline fires it (tracked requests failed with a message naming the work
// and the deadline, new ones refused), the work returning clears it in "wait" mode, and an idle
// engine never fires. No test depends on timing beyond "a unit held until the trip is seen": the
// held unit is released only after the trip is observed, with long waits for the observation.
#include "serve/lifecycle/watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "model/test_support.h"
#include "serve/engine/generation.h"
#include "serve/lifecycle/watchdog_test_util.h"

namespace tandem::serve {
namespace {

using namespace std::chrono_literals;

// Records trips (on the watchdog thread) for the test to wait on.
struct TripLog {
  std::mutex m;
  std::condition_variable cv;
  std::vector<WatchdogTrip> trips;
  void add(const WatchdogTrip& t) {
    {
      std::lock_guard lk(m);
      trips.push_back(t);
    }
    cv.notify_all();
  }
  bool wait_for(size_t n, std::chrono::milliseconds d = 60s) {
    std::unique_lock lk(m);
    return cv.wait_for(lk, d, [&] { return trips.size() >= n; });
  }
};

WatchdogConfig waiting(int64_t deadline_ms, TripLog* log = nullptr) {
  WatchdogConfig c;
  c.deadline_ms = deadline_ms;
  c.per_token_ms = 0;
  c.exit_on_trip = false;  // never exit the test process
  if (log) c.on_trip = [log](const WatchdogTrip& t) { log->add(t); };
  return c;
}

using test_support::wait_until;

TEST(Watchdog, OffIsInert) {
  WatchdogConfig c;
  c.deadline_ms = 0;
  bool hooked = false;
  c.work_hook = [&](const WorkUnit&) { hooked = true; };
  Watchdog w(c);
  EXPECT_FALSE(w.enabled());
  {
    const auto s = w.step(true, 0, 1);
    const auto p = w.unit(WorkKind::Pass, 512);
    EXPECT_EQ(w.status().current.kind, WorkKind::Idle);
  }
  EXPECT_FALSE(hooked);
  EXPECT_FALSE(w.refusal());
  const WatchdogStatus s = w.status();
  EXPECT_FALSE(s.enabled);
  EXPECT_FALSE(s.tripped);
}

TEST(Watchdog, UnitsNestInTheStepWithTheirAllowanceAndRestartItsClock) {
  WatchdogConfig c = waiting(600000);
  c.per_token_ms = 7;
  std::vector<WorkUnit> seen;
  c.work_hook = [&](const WorkUnit& u) { seen.push_back(u); };
  Watchdog w(c);
  EXPECT_EQ(w.status().current.kind, WorkKind::Idle);
  {
    const auto step = w.step(/*prefill=*/true, 2, 41);
    const WorkUnit st = w.status().current;
    EXPECT_EQ(st.kind, WorkKind::Step);
    EXPECT_EQ(st.allowance_ms, 600000);
    {
      const auto pass = w.unit(WorkKind::Pass, 512);
      const WorkUnit p = w.status().current;
      EXPECT_EQ(p.kind, WorkKind::Pass);
      EXPECT_EQ(p.slot, 2);  // the step's
      EXPECT_EQ(p.request, 41u);
      EXPECT_TRUE(p.prefill);
      EXPECT_EQ(p.allowance_ms, 600000 + 512 * 7);
      EXPECT_EQ(p.describe(), "slot 2, request 41: a forward pass of 512 tokens (prefill)");
    }
    // The pass returned: progress, the step's clock starts again.
    const WorkUnit after = w.status().current;
    EXPECT_EQ(after.kind, WorkKind::Step);
    EXPECT_GE(after.since, st.since);
    EXPECT_EQ(after.allowance_ms, 600000);
    {
      const auto enc = w.unit(WorkKind::Encode, 64);
      EXPECT_EQ(w.status().current.describe(), "slot 2, request 41: the vision encoder on an image of 64 rows (prefill)");
    }
  }
  EXPECT_EQ(w.status().current.kind, WorkKind::Idle);
  ASSERT_EQ(seen.size(), 3u);  // the hook saw every unit as it started
  EXPECT_EQ(seen[0].kind, WorkKind::Step);
  EXPECT_EQ(seen[1].kind, WorkKind::Pass);
  EXPECT_EQ(seen[2].kind, WorkKind::Encode);
  EXPECT_EQ(w.status().trips, 0u);
}

TEST(Watchdog, AUnitPastItsDeadlineFailsTheRequestsAndRefusesNewOnesUntilItReturns) {
  TripLog log;
  Watchdog w(waiting(200, &log));
  auto stuck = std::make_shared<Generation>(7);
  auto other = std::make_shared<Generation>(8);
  auto finished = std::make_shared<Generation>(9);
  GenerationResult done;
  done.reason = FinishReason::Length;
  finished->finish(done);
  w.track(stuck);
  w.track(other);
  w.track(finished);
  {
    const auto step = w.step(/*prefill=*/false, 0, 7);
    const auto pass = w.unit(WorkKind::Pass, 1);
    ASSERT_TRUE(log.wait_for(1)) << "the watchdog did not fire";
    ASSERT_TRUE(stuck->wait_done(60s));
    const GenerationResult& r = stuck->result();
    EXPECT_EQ(r.reason, FinishReason::Watchdog);
    EXPECT_NE(r.error.find("watchdog: slot 0, request 7: a forward pass of 1 token (decode)"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("past its deadline of 0.2 s"), std::string::npos) << r.error;
    EXPECT_TRUE(stuck->cancel_requested());  // the scheduler drops it should the work return
    ASSERT_TRUE(other->wait_done(60s));
    EXPECT_EQ(other->result().reason, FinishReason::Watchdog);
    EXPECT_NE(other->result().error.find("another request's work"), std::string::npos) << other->result().error;
    EXPECT_EQ(finished->result().reason, FinishReason::Length);  // already finished: left alone

    const WatchdogTrip& t = log.trips[0];
    EXPECT_EQ(t.unit.kind, WorkKind::Pass);
    EXPECT_EQ(t.unit.request, 7u);
    EXPECT_GE(t.stuck_ms, 200);
    EXPECT_EQ(t.requests_failed, 2);
    const WatchdogStatus s = w.status();
    testing::expect_stuck_after_one_trip(s, 2);
    ASSERT_TRUE(s.last);
    EXPECT_EQ(s.last->message, r.error);
    const auto why = w.refusal();
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("watchdog"), std::string::npos);
    // A request tracked now (it passed submit's check as the watchdog fired) fails at once.
    auto late = std::make_shared<Generation>(10);
    w.track(late);
    ASSERT_TRUE(late->done());
    EXPECT_EQ(late->result().reason, FinishReason::Watchdog);
  }
  // The stuck work returned: serving again, the trip remembered.
  ASSERT_TRUE(wait_until([&] { return !w.status().tripped; }));
  const WatchdogStatus s = w.status();
  EXPECT_FALSE(s.stuck);
  EXPECT_EQ(s.trips, 1u);
  EXPECT_EQ(s.requests_failed, 3u);
  EXPECT_FALSE(w.refusal());
  EXPECT_EQ(log.trips.size(), 1u);  // one trip per stuck unit
}

TEST(Watchdog, IdleNeverFires) {
  TripLog log;
  Watchdog w(waiting(300, &log));
  { const auto step = w.step(true, 0, 1); }  // a short step, then idle for several deadlines
  EXPECT_FALSE(log.wait_for(1, 1500ms));
  EXPECT_EQ(w.status().trips, 0u);
  EXPECT_FALSE(w.status().tripped);
}

}  // namespace
}  // namespace tandem::serve
