// CPU time of a fixed set of threads (issue 27, energy figures): the engine's compute threads —
// its scheduler thread, which is thread 0 of every parallel_for, and the thread pools' workers.
//
// Why per-thread clocks and not CLOCK_PROCESS_CPUTIME_ID: the process clock also counts the HTTP
// threads (JSON, tokenizing, the 50 ms polls of waiting handlers), which work for other requests
// while a step runs; the compute threads work only for the step the scheduler is running, so a
// delta of their clocks around one step is that step's CPU time. A worker's spin after the
// step's last operation (ThreadPool's spin_us, 200 µs at most) may fall after the step's end
// reading and is then counted to nobody (or to the next step): the figures are a lower bound by
// at most that much per worker and step.
//
// Reading costs one clock_gettime per thread (a system call for another thread's clock: about a
// microsecond), no allocation; any thread may read (the clocks are by id, not the caller's).
#pragma once

#include <time.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace tandem {

// Nanoseconds of CPU a clock has counted; 0 when the clock cannot be read (a thread that exited).
int64_t cpu_clock_ns(clockid_t clock);
// The calling thread's CPU clock id (for a ThreadCpuClock built on another thread).
clockid_t this_thread_cpu_clock();
// The whole process's CPU time (every thread), ns.
int64_t process_cpu_ns();

class ThreadCpuClock {
 public:
  ThreadCpuClock() = default;
  explicit ThreadCpuClock(std::vector<clockid_t> clocks) : clocks_(std::move(clocks)) {}
  void add(clockid_t c) { clocks_.push_back(c); }
  void add(const std::vector<clockid_t>& cs) { clocks_.insert(clocks_.end(), cs.begin(), cs.end()); }
  size_t threads() const { return clocks_.size(); }
  // The sum of the threads' CPU time, ns (monotonic while the threads live).
  int64_t ns() const;

 private:
  std::vector<clockid_t> clocks_;
};

}  // namespace tandem
