// Holding and giving back compute resources between bursts (paper §4.6), without
// unloading anything: weights, KV caches, recurrent states, checkpoints and the
// prompt cache all stay where they are.
//
// ResourceGovernor is the interface a backend implements (an NPU backend would
// vote its power/clock resources here). CpuResourceGovernor is the CPU one:
//  * active: the thread pool's workers spin briefly between operations, and, when
//    enabled and /dev/cpu_dma_latency is writable, a CPU-latency (PM QoS) request
//    keeps the cores out of deep idle states;
//  * released (after idle_release_ms with no batch submitted or in flight): workers
//    block at once (spin 0) and the latency request is closed.
// acquire() and the release decision share one mutex, so a batch never runs on
// released resources and a release never interrupts a batch. Idle time is measured
// on CLOCK_BOOTTIME, so time spent suspended counts as idle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "runtime/thread_pool.h"

namespace tandem {

struct GovernorStats {
  uint64_t releases = 0;
  uint64_t reacquires = 0;
  double seconds_released = 0;     // total, including the current released period
  double last_wake_latency_ms = 0; // time acquire() spent bringing resources back
  double max_wake_latency_ms = 0;
  bool released = false;
  bool latency_request_held = false;
};

class ResourceGovernor {
 public:
  virtual ~ResourceGovernor() = default;

  // Held for the duration of one batch: resources are active while any lease lives.
  class Lease {
   public:
    Lease() = default;
    explicit Lease(ResourceGovernor* g) : g_(g) {}
    Lease(Lease&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept {
      if (this != &o) { reset(); g_ = o.g_; o.g_ = nullptr; }
      return *this;
    }
    ~Lease() { reset(); }
    void reset() {
      if (g_) g_->end_batch();
      g_ = nullptr;
    }
   private:
    ResourceGovernor* g_ = nullptr;
  };

  // Re-acquires if released (blocking until the resources are back), marks a batch in flight.
  Lease acquire() {
    begin_batch();
    return Lease(this);
  }
  virtual GovernorStats stats() const = 0;

 protected:
  virtual void begin_batch() = 0;
  virtual void end_batch() = 0;
};

struct CpuGovernorOptions {
  int64_t idle_release_ms = 3000;  // <= 0: never release
  bool dma_latency = false;        // hold a /dev/cpu_dma_latency request while active
  int active_spin_us = 200;        // workers' spin between operations while active
};

class CpuResourceGovernor final : public ResourceGovernor {
 public:
  CpuResourceGovernor(ThreadPool& pool, CpuGovernorOptions opt = {});
  ~CpuResourceGovernor() override;

  GovernorStats stats() const override;
  // Releases now if nothing is in flight (tests, and an explicit "going idle" signal).
  bool release_now();
  void set_idle_release_ms(int64_t ms);
  // Holds (or drops) the /dev/cpu_dma_latency request while active.
  void set_dma_latency(bool on);

  // Seconds on CLOCK_BOOTTIME (includes suspend).
  static double boottime_seconds();

 protected:
  void begin_batch() override;
  void end_batch() override;

 private:
  void watch();             // the release thread
  void release_locked();    // mu_ held
  void acquire_locked();    // mu_ held

  ThreadPool& pool_;
  CpuGovernorOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  bool released_ = false;
  bool stop_ = false;
  double last_activity_ = 0;   // boottime seconds
  double released_since_ = 0;
  int latency_fd_ = -1;
  GovernorStats stats_;
  std::thread watcher_;
};

}  // namespace tandem
