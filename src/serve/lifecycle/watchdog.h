// The engine's watchdog (issue 27): a forward pass, an image encode or a scheduler step that runs
// past its deadline (a stuck worker, a deadlock) fails the requests in flight with a clear error
// and leaves the server in a defined state.
//
// Why not recover by restarting the engine in process: a thread stuck inside a kernel or on a lock
// cannot be stopped safely in C++ (no cancellation; killing it leaves its locks held and the
// model's buffers half written). So the defined state after a trip is:
//   1. every request in flight (the stuck one, the other slots', the queued ones) finishes with
//      FinishReason::Watchdog and a message naming the stuck work and the deadline (the HTTP
//      client gets a 503), and new requests are refused;
//   2. the engine reports it (status(): GET /health answers 503 with the details);
//   3. with exit_on_trip (the default; tandem-server's --watchdog-exit), after grace_ms, so that
//      the failed requests' answers are written, the process exits with kWatchdogExitStatus for
//      a supervisor (systemd Restart=on-failure, an Android service) to restart it; the states
//      survive a restart only where they are on disk (--state-dir).
//   Without exit_on_trip (--watchdog-exit off, the tests) the engine stays refusing until the
//   stuck work returns; then it serves again (the failed requests were cancelled, so the
//   scheduler drops them; the slots keep their states, which the completed work left consistent).
//
// How it watches: the scheduler thread publishes a heartbeat, the unit of work it is in (a step,
// and inside it each forward pass, verification pass, draft and image encode) with its start time
// and its allowance; a unit that returns is progress. The watchdog thread sleeps until the current
// unit's deadline and fires when that unit is still the one running. It never takes the engine's
// mutex (the stuck thread may hold it): the heartbeat has its own mutex, which the scheduler holds
// only for the few stores of a mark, and the requests are failed through their Generation objects
// (thread-safe, finish() idempotent), which the watchdog tracks from submit().
//
// Deadlines: a unit's allowance is deadline_ms + per_token_ms x its tokens (image rows for an
// encode). Per unit, not per request: a prefill is many passes of at most n_ubatch tokens, so a
// long prompt does not need a long deadline, and a hang inside it is caught after one pass's
// allowance. The defaults (60 s + 100 ms per token: a 512-token pass gets 111 s) are generous on
// purpose: a slow phone CPU prefills a few tens of tokens per second with a 2-4B model, the first
// pass after an idle release re-acquires the compute threads, and a reload after an idle unload
// maps the weights again (the paper's 9 s cold start). A false trip costs a restart; a late one
// only delays it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace tandem::serve {

class Generation;

// The status tandem-server exits with after a trip: EX_TEMPFAIL (sysexits.h), "try again later",
// distinct from its other failures (1: start-up error, 2: bad command line). docs/http.md.
inline constexpr int kWatchdogExitStatus = 75;

// What the scheduler thread is doing.
enum class WorkKind : uint8_t {
  Idle,       // nothing: no deadline
  Step,       // a scheduler step outside the units below (sampling, restore, planning, bookkeeping)
  Pass,       // a forward pass over prompt or decoded tokens
  ImagePass,  // a forward pass over an image's rows
  Verify,     // a speculative verification pass
  Draft,      // MTP drafting
  Encode,     // the vision encoder on one image
  Reload,     // the weights mapped again after an idle unload (no slot, no request: all queued)
};
std::string_view to_string(WorkKind k);

struct WorkUnit {
  WorkKind kind = WorkKind::Idle;
  bool prefill = false;  // the step is a request's prefill (else a decode step)
  int slot = -1;
  uint64_t request = 0;  // the Generation's id (0: none)
  int64_t tokens = 0;    // tokens (image rows for an encode) the unit computes; 0 for a step
  int64_t allowance_ms = 0;
  std::chrono::steady_clock::time_point since;
  // "slot 0, request 7: a forward pass of 512 tokens (prefill)".
  std::string describe() const;
};

struct WatchdogTrip {
  WorkUnit unit;             // the work that passed its deadline
  int64_t stuck_ms = 0;      // how long it had run when the watchdog fired
  int requests_failed = 0;   // requests finished with FinishReason::Watchdog
  std::string message;       // what the stuck request's client reads
};

struct WatchdogConfig {
  // Every unit's base allowance; 0: no watchdog (no thread). tandem-server's --watchdog-s.
  int64_t deadline_ms = 60000;
  int64_t per_token_ms = 100;  // --watchdog-ms-per-token: added per token (image row) of the unit
  int64_t grace_ms = 2000;     // --watchdog-grace-ms: from the trip to the exit
  // --watchdog-exit: exit the process after a trip. false: stay up, refusing until the work returns.
  bool exit_on_trip = true;
  // Called on the watchdog thread after the requests are failed, before the grace (tests record
  // the trip; not a flag).
  std::function<void(const WatchdogTrip&)> on_trip;
  // Test hook (not a flag): called on the scheduler thread at the start of every unit of work,
  // after its heartbeat is published, outside every lock; blocking in it is a hang the watchdog
  // sees. Only called with the watchdog on.
  std::function<void(const WorkUnit&)> work_hook;
};

struct WatchdogStatus {
  bool enabled = false;
  bool tripped = false;  // a trip happened and the engine refuses requests (until it exits, or the work returns)
  bool stuck = false;    // the work that tripped it has not returned
  bool exiting = false;  // tripped with exit_on_trip: the process exits at exit_in_ms
  int64_t exit_in_ms = 0;
  int exit_status = kWatchdogExitStatus;
  WatchdogConfig config;  // the deadlines (the callbacks not copied)
  uint64_t trips = 0;
  uint64_t requests_failed = 0;
  std::optional<WatchdogTrip> last;  // the latest trip
  WorkUnit current;                  // what the scheduler does now
};

class Watchdog {
 public:
  explicit Watchdog(WatchdogConfig cfg);  // starts the watching thread when deadline_ms > 0
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  bool enabled() const { return cfg_.deadline_ms > 0; }

  // A unit of work on the scheduler thread, for its lifetime (progress when it ends: the
  // enclosing unit's clock restarts). Inert when the watchdog is off.
  class Scope {
   public:
    Scope(Scope&& o) noexcept : w_(o.w_), prev_(o.prev_) { o.w_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class Watchdog;
    Scope(Watchdog* w, WorkUnit prev) : w_(w), prev_(prev) {}
    Watchdog* w_;
    WorkUnit prev_;
  };
  // A scheduler step of the request `request` in `slot`.
  [[nodiscard]] Scope step(bool prefill, int slot, uint64_t request);
  // A unit inside the current step (its slot and request): a pass, a draft, an encode; outside a
  // step (a reload), a unit of the engine's (slot -1, request 0).
  [[nodiscard]] Scope unit(WorkKind kind, int64_t tokens);

  // Requests the watchdog fails when it fires (weak references; finished ones are pruned).
  void track(const std::shared_ptr<Generation>& gen);
  // Why a new request is refused now (the watchdog tripped), or nothing.
  std::optional<std::string> refusal() const;

  WatchdogStatus status() const;

 private:
  Scope begin(WorkUnit u);
  void end(const WorkUnit& prev);
  void run();
  void count_failed(int d);
  void fire(std::unique_lock<std::mutex>& lk, const WorkUnit& u, std::chrono::steady_clock::time_point now);

  const WatchdogConfig cfg_;

  mutable std::mutex mu_;  // the heartbeat and the trip state; never held across work or callbacks
  std::condition_variable cv_;
  WorkUnit cur_;
  uint64_t seq_ = 0;            // incremented at every mark: a changed seq_ is progress
  bool watcher_idle_ = false;   // the thread waits without a deadline: a begin() from Idle wakes it
  bool stuck_ = false;          // fired, and seq_ has not moved since
  uint64_t stuck_seq_ = 0;
  bool tripped_ = false;
  std::optional<std::chrono::steady_clock::time_point> exit_at_;
  uint64_t trips_ = 0, requests_failed_ = 0;
  std::optional<WatchdogTrip> last_;
  bool stop_ = false;

  std::mutex gens_mu_;
  std::unordered_map<uint64_t, std::weak_ptr<Generation>> gens_;
  size_t prune_at_ = 64;

  std::thread thread_;
};

}  // namespace tandem::serve
