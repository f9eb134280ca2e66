// A persistent pool of worker threads for the forward pass.
//
// parallel_for(n, fn) runs fn(task, thread) for every task in [0, n) on all threads
// (the caller is thread 0) and returns when all are done. No thread is created per
// operation. Between operations of one pass the workers spin for a short while
// (spin_us), so the next operation starts without a wake-up; after that they block
// on the job counter (a futex), costing no CPU while the model sits idle.
//
// Tasks are claimed with a compare-and-swap on one word that holds (job generation,
// task count, next task). A worker can only read the job description after claiming a
// task of the current job, and the caller does not return before every claimed task
// is done, so a worker that was descheduled mid-way never sees a half-written job,
// and the caller never waits for a worker that is not running (it does the tasks
// itself): on a loaded 2-core machine that matters more than anything else here.
// The resource governor (idle release) calls set_spin_us(0) to make idle workers
// block at once, and back to re-acquire.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace tandem {

class ThreadPool {
 public:
  // n_threads <= 0: one per physical core.
  explicit ThreadPool(int n_threads = 0, int spin_us = 200);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  template <typename F>
  void parallel_for(int64_t n_tasks, F&& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
      for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(n_tasks, [](void* ctx, int64_t task, int thread) { (*static_cast<Fn*>(ctx))(task, thread); }, &fn);
  }

  void set_spin_us(int us) { spin_us_.store(us, std::memory_order_relaxed); }
  int spin_us() const { return spin_us_.load(std::memory_order_relaxed); }
  // Jobs run so far (for tests and metrics).
  uint64_t jobs() const { return jobs_.load(std::memory_order_relaxed); }
  // The workers' CPU clocks (runtime/cpu_clock.h; not the caller's, thread 0 of every job):
  // what the engine counts as compute time with its scheduler thread's.
  const std::vector<clockid_t>& worker_cpu_clocks() const { return worker_clocks_; }

  static int physical_cores();

 private:
  using TaskFn = void (*)(void*, int64_t, int);
  // state_ = generation << 40 | n_tasks << 20 | next task.
  static constexpr int kTaskBits = 20;
  static constexpr uint64_t kTaskMask = (uint64_t{1} << kTaskBits) - 1;
  static uint64_t next_of(uint64_t s) { return s & kTaskMask; }
  static uint64_t count_of(uint64_t s) { return (s >> kTaskBits) & kTaskMask; }

  void run(int64_t n_tasks, TaskFn fn, void* ctx);
  void run_chunk(int64_t first, int64_t n_tasks, TaskFn fn, void* ctx);
  void worker(int index);
  // Claims and runs tasks of the job in state s until none is left.
  void work(int thread);

  int n_threads_;
  std::atomic<int> spin_us_;
  // The current job (written only by the caller, before state_ publishes it).
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t first_task_ = 0;
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> jobs_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<clockid_t> worker_clocks_;
};

}  // namespace tandem
