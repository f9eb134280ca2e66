// A hang the watchdog tests inject (engine, HTTP server): WatchdogConfig::work_hook blocks the
// scheduler thread in every unit of one kind until the test opens the gate; and what a stuck
// watchdog's status says (the watchdog's own tests and the engine's).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "serve/lifecycle/watchdog.h"

namespace tandem::serve::testing {

struct WatchdogGate {
  WorkKind kind;
  std::mutex m;
  std::condition_variable cv;
  bool open_ = false;
  int entered = 0;
  explicit WatchdogGate(WorkKind k = WorkKind::Pass) : kind(k) {}
  void hook(const WorkUnit& u) {
    if (u.kind != kind) return;
    std::unique_lock lk(m);
    ++entered;
    cv.notify_all();
    cv.wait(lk, [&] { return open_; });
  }
  // True once a unit of the gate's kind is blocked in it.
  bool wait_entered(std::chrono::milliseconds d = std::chrono::seconds(60)) {
    std::unique_lock lk(m);
    return cv.wait_for(lk, d, [&] { return entered > 0; });
  }
  void open() {
    {
      std::lock_guard lk(m);
      open_ = true;
    }
    cv.notify_all();
  }
};

// The status of a watchdog whose first trip is still stuck, having failed `requests_failed` requests.
inline void expect_stuck_after_one_trip(const WatchdogStatus& s, uint64_t requests_failed) {
  EXPECT_TRUE(s.tripped);
  EXPECT_TRUE(s.stuck);
  EXPECT_FALSE(s.exiting);
  EXPECT_EQ(s.trips, 1u);
  EXPECT_EQ(s.requests_failed, requests_failed);
}

// Opens the gate when the test leaves, before the engine (declared earlier) joins its scheduler.
struct OpenOnExit {
  std::shared_ptr<WatchdogGate> g;
  ~OpenOnExit() { g->open(); }
};

}  // namespace tandem::serve::testing
