// A persistent pool of worker threads for the forward pass.
//
// parallel_for(n, fn) runs fn(task, thread) for every task in [0, n) on all threads
// (the caller is thread 0) and returns when all are done. No thread is created per
// operation. Between operations of one pass the workers spin for a short while
// (spin_us), so the next operation starts without a wake-up; after that they block
// on the job counter (a futex), costing no CPU while the model sits idle.
//
// Every worker acknowledges every job before parallel_for returns, so the job
// description is never touched after its caller moved on and no job is skipped.
// The resource governor (idle release) calls set_spin_us(0) to make idle workers
// block at once, and back to re-acquire.
#pragma once

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
  uint64_t jobs() const { return generation_.load(std::memory_order_relaxed); }

  static int physical_cores();

 private:
  using TaskFn = void (*)(void*, int64_t, int);
  void run(int64_t n_tasks, TaskFn fn, void* ctx);
  void worker(int index);
  void do_tasks(int thread);

  int n_threads_;
  std::atomic<int> spin_us_;
  // The current job (written only by the caller, before generation_ is bumped).
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_tasks_ = 0;
  alignas(64) std::atomic<int64_t> next_task_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  struct alignas(64) Ack { std::atomic<uint64_t> gen{0}; };
  std::unique_ptr<Ack[]> acks_;
  std::vector<std::thread> threads_;
};

}  // namespace tandem
