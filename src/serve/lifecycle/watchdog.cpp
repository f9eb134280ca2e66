#include "serve/lifecycle/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "serve/engine/generation.h"

namespace tandem::serve {

namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// Straight to the file descriptor: stdio's lock could be held by the stuck thread.
void write_stderr(const std::string& line) {
  const std::string s = line + "\n";
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(STDERR_FILENO, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

std::string_view to_string(WorkKind k) {
  switch (k) {
    case WorkKind::Idle: return "idle";
    case WorkKind::Step: return "step";
    case WorkKind::Pass: return "pass";
    case WorkKind::ImagePass: return "image_pass";
    case WorkKind::Verify: return "verify";
    case WorkKind::Draft: return "draft";
    case WorkKind::Encode: return "encode";
    case WorkKind::Reload: return "reload";
  }
  return "idle";
}

std::string WorkUnit::describe() const {
  if (kind == WorkKind::Idle) return "idle";
  if (kind == WorkKind::Reload) return "reloading the weights after an idle unload";
  std::string s = "slot " + std::to_string(slot) + ", request " + std::to_string(request) + ": ";
  const std::string n = std::to_string(tokens);
  switch (kind) {
    case WorkKind::Step: s += "a scheduler step outside the model's passes"; break;
    case WorkKind::Pass: s += "a forward pass of " + n + (tokens == 1 ? " token" : " tokens"); break;
    case WorkKind::ImagePass: s += "a forward pass of " + n + " image rows"; break;
    case WorkKind::Verify: s += "a verification pass of " + n + " tokens"; break;
    case WorkKind::Draft: s += "drafting"; break;
    case WorkKind::Encode: s += "the vision encoder on an image of " + n + " rows"; break;
    case WorkKind::Idle:
    case WorkKind::Reload: break;
  }
  s += prefill ? " (prefill)" : " (decode)";
  return s;
}

Watchdog::Watchdog(WatchdogConfig cfg) : cfg_(std::move(cfg)) {
  if (enabled()) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Watchdog::Scope::~Scope() {
  if (w_) w_->end(prev_);
}

Watchdog::Scope Watchdog::step(bool prefill, int slot, uint64_t request) {
  WorkUnit u;
  u.kind = WorkKind::Step;
  u.prefill = prefill;
  u.slot = slot;
  u.request = request;
  return begin(u);
}

Watchdog::Scope Watchdog::unit(WorkKind kind, int64_t tokens) {
  WorkUnit u;
  u.kind = kind;
  u.tokens = tokens;
  u.slot = -2;  // inherit the step's
  return begin(u);
}

Watchdog::Scope Watchdog::begin(WorkUnit u) {
  if (!enabled()) return Scope(nullptr, WorkUnit{});
  u.since = Clock::now();
  u.allowance_ms = cfg_.deadline_ms + cfg_.per_token_ms * std::max<int64_t>(0, u.tokens);
  WorkUnit prev;
  bool wake = false;
  {
    std::lock_guard lk(mu_);
    prev = cur_;
    if (u.slot == -2) {  // a unit inside the current step
      u.slot = cur_.slot;
      u.request = cur_.request;
      u.prefill = cur_.prefill;
    }
    cur_ = u;
    ++seq_;
    wake = watcher_idle_ || stuck_;
  }
  if (wake) cv_.notify_all();
  Scope s(this, prev);
  if (cfg_.work_hook) cfg_.work_hook(u);
  return s;
}

void Watchdog::end(const WorkUnit& prev) {
  bool wake = false;
  {
    std::lock_guard lk(mu_);
    cur_ = prev;
    if (cur_.kind != WorkKind::Idle) cur_.since = Clock::now();  // progress: the enclosing unit's clock restarts
    ++seq_;
    wake = stuck_;
  }
  if (wake) cv_.notify_all();
}

void Watchdog::track(const std::shared_ptr<Generation>& gen) {
  if (!enabled()) return;
  {
    std::lock_guard lk(gens_mu_);
    if (gens_.size() >= prune_at_) {
      for (auto it = gens_.begin(); it != gens_.end();) {
        const auto g = it->second.lock();
        if (!g || g->done()) it = gens_.erase(it);
        else ++it;
      }
      prune_at_ = std::max<size_t>(64, 2 * gens_.size());
    }
    gens_[gen->id()] = gen;
  }
  // Submitted while the watchdog fired: nothing will run it.
  if (const auto why = refusal()) {
    GenerationResult r;
    r.reason = FinishReason::Watchdog;
    r.error = *why;
    count_failed(+1);
    if (gen->finish(std::move(r))) gen->cancel();
    else count_failed(-1);
  }
}

void Watchdog::count_failed(int d) {
  std::lock_guard lk(mu_);
  requests_failed_ += static_cast<uint64_t>(d);  // -1 wraps back: unsigned arithmetic
  if (last_ && d > 0) ++last_->requests_failed;
  else if (last_ && d < 0) --last_->requests_failed;
}

std::optional<std::string> Watchdog::refusal() const {
  std::lock_guard lk(mu_);
  if (!tripped_) return std::nullopt;
  std::string why = "watchdog: the engine is stuck (" + (last_ ? last_->unit.describe() : std::string("?")) + ")";
  why += cfg_.exit_on_trip ? "; the server is restarting" : "; requests are refused until that work returns";
  return why;
}

WatchdogStatus Watchdog::status() const {
  WatchdogStatus s;
  s.enabled = enabled();
  s.config.deadline_ms = cfg_.deadline_ms;
  s.config.per_token_ms = cfg_.per_token_ms;
  s.config.grace_ms = cfg_.grace_ms;
  s.config.exit_on_trip = cfg_.exit_on_trip;
  std::lock_guard lk(mu_);
  s.tripped = tripped_;
  s.stuck = stuck_;
  s.exiting = exit_at_.has_value();
  if (exit_at_)
    s.exit_in_ms = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(*exit_at_ - Clock::now()).count());
  s.trips = trips_;
  s.requests_failed = requests_failed_;
  s.last = last_;
  s.current = cur_;
  return s;
}

void Watchdog::run() {
  std::unique_lock lk(mu_);
  while (!stop_) {
    if (stuck_) {
      if (seq_ == stuck_seq_) {
        cv_.wait(lk);  // begin() / end() wake it: the stuck work returned
        continue;
      }
      stuck_ = false;
      if (!cfg_.exit_on_trip) tripped_ = false;  // the scheduler runs again: serve again
      write_stderr("tandem: watchdog: the stuck work returned after " +
                   (last_ ? seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
                                                                                               last_->unit.since)
                                             .count())
                          : std::string("?")) +
                   (cfg_.exit_on_trip ? "" : "; serving again"));
      continue;
    }
    if (cur_.kind == WorkKind::Idle) {
      // No deadline while idle: no periodic wake-ups on an idle phone.
      watcher_idle_ = true;
      cv_.wait(lk);
      watcher_idle_ = false;
      continue;
    }
    const auto due = cur_.since + std::chrono::milliseconds(cur_.allowance_ms);
    const auto now = Clock::now();
    if (now < due) {
      // Progress does not wake this thread (no wake-up per pass): it re-reads the unit at the old
      // deadline and waits for the new one.
      cv_.wait_until(lk, due);
      continue;
    }
    fire(lk, cur_, now);
  }
}

void Watchdog::fire(std::unique_lock<std::mutex>& lk, const WorkUnit& stuck, Clock::time_point now) {
  const WorkUnit u = stuck;
  WatchdogTrip trip;
  trip.unit = u;
  trip.stuck_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - u.since).count();
  std::string deadline = seconds_text(u.allowance_ms);
  if (u.tokens > 0 && cfg_.per_token_ms > 0)
    deadline += " (" + seconds_text(cfg_.deadline_ms) + " + " + std::to_string(u.tokens) + " x " +
                std::to_string(cfg_.per_token_ms) + " ms)";
  const std::string then = cfg_.exit_on_trip
                               ? "the server is restarting (exit status " + std::to_string(kWatchdogExitStatus) + ")"
                               : "the engine refuses requests until that work returns";
  trip.message = "watchdog: " + u.describe() + " has run for " + seconds_text(trip.stuck_ms) +
                 ", past its deadline of " + deadline + "; " + then;
  const std::string others = std::string(u.request != 0 ? "watchdog: the engine is stuck in another request's work ("
                                                          : "watchdog: the engine is stuck (") +
                             u.describe() + ", past its deadline of " + deadline + "); " + then;
  // Published before any request fails, so that a client that reads its error and asks /health
  // sees the trip.
  stuck_ = true;
  stuck_seq_ = seq_;
  tripped_ = true;
  ++trips_;
  if (cfg_.exit_on_trip) exit_at_ = now + std::chrono::milliseconds(cfg_.grace_ms);
  last_ = trip;
  lk.unlock();

  std::vector<std::shared_ptr<Generation>> live;
  {
    std::lock_guard g(gens_mu_);
    for (auto it = gens_.begin(); it != gens_.end();) {
      if (auto gen = it->second.lock()) live.push_back(std::move(gen));
      it = gens_.erase(it);
    }
  }
  int failed = 0;
  for (const auto& gen : live) {
    GenerationResult r;
    r.reason = FinishReason::Watchdog;
    r.error = gen->id() == u.request ? trip.message : others;
    // Counted before the client can read its result (and see the count in /health), taken
    // back if the engine finished it first.
    count_failed(+1);
    if (!gen->finish(std::move(r))) {
      count_failed(-1);
      continue;
    }
    ++failed;
    gen->cancel();  // should the work return, the scheduler drops it (it checks between steps)
  }
  trip.requests_failed = failed;
  write_stderr("tandem: " + trip.message + " (" + std::to_string(failed) + " requests failed)");
  if (cfg_.on_trip) cfg_.on_trip(trip);
  lk.lock();
  if (!cfg_.exit_on_trip) return;
  cv_.wait_until(lk, *exit_at_, [&] { return stop_; });
  if (stop_) return;
  write_stderr("tandem: watchdog: exiting with status " + std::to_string(kWatchdogExitStatus) +
               " for a supervisor to restart the server");
  // Not exit(): static destructors and atexit handlers would run beside the stuck thread, which
  // holds the engine's locks and buffers.
  std::_Exit(kWatchdogExitStatus);
}

}  // namespace tandem::serve
