#include "runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TANDEM_PAUSE() _mm_pause()
#else
#define TANDEM_PAUSE() ((void)0)
#endif

namespace tandem {

int ThreadPool::physical_cores() {
  // Distinct (physical id, core id) pairs; hyper-threads share a core's units.
  std::ifstream f("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(f, line)) {
    auto value = [&] { return line.substr(line.find(':') + 1); };
    if (line.rfind("physical id", 0) == 0) phys = value();
    if (line.rfind("core id", 0) == 0) cores.insert({phys, value()});
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

ThreadPool::ThreadPool(int n_threads, int spin_us)
    : n_threads_(n_threads > 0 ? n_threads : physical_cores()), spin_us_(spin_us) {
  for (int i = 1; i < n_threads_; ++i) {
    threads_.emplace_back([this, i] { worker(i); });
    clockid_t c{};
    if (pthread_getcpuclockid(threads_.back().native_handle(), &c) == 0) worker_clocks_.push_back(c);
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  state_.fetch_add(uint64_t{1} << (2 * kTaskBits));  // a new generation with no tasks wakes everyone
  state_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::work(int thread) {
  uint64_t s = state_.load(std::memory_order_acquire);
  while (next_of(s) < count_of(s)) {
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      // The claimed task keeps the job alive: its fields are stable until done_ counts it.
      fn_(ctx_, first_task_ + static_cast<int64_t>(next_of(s)), thread);
      done_.fetch_add(1, std::memory_order_acq_rel);
      s = state_.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::run_chunk(int64_t first, int64_t n_tasks, TaskFn fn, void* ctx) {
  fn_ = fn;
  ctx_ = ctx;
  first_task_ = first;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t gen = (state_.load(std::memory_order_relaxed) >> (2 * kTaskBits)) + 1;
  state_.store(gen << (2 * kTaskBits) | static_cast<uint64_t>(n_tasks) << kTaskBits);  // publish (seq_cst)
  if (sleepers_.load() > 0) state_.notify_all();
  work(0);
  while (done_.load(std::memory_order_acquire) != n_tasks) TANDEM_PAUSE();
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  jobs_.fetch_add(1, std::memory_order_relaxed);
  // More tasks than one word can count run as consecutive jobs.
  const int64_t max = static_cast<int64_t>(kTaskMask);
  for (int64_t first = 0; first < n_tasks; first += max) run_chunk(first, std::min(max, n_tasks - first), fn, ctx);
}

void ThreadPool::worker(int index) {
  uint64_t seen = state_.load(std::memory_order_acquire);
  for (;;) {
    work(index);
    if (stop_.load()) return;
    // Wait for the next job: spin briefly (the next operation of a pass usually follows
    // within microseconds), then block on the state word (futex).
    uint64_t now = state_.load(std::memory_order_acquire);
    const uint64_t gen = seen >> (2 * kTaskBits);
    if ((now >> (2 * kTaskBits)) == gen) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us());
      while (((now = state_.load(std::memory_order_acquire)) >> (2 * kTaskBits)) == gen) {
        if (std::chrono::steady_clock::now() >= until) {
          sleepers_.fetch_add(1);
          state_.wait(now);  // woken by the publisher when sleepers_ > 0; spurious returns re-check
          sleepers_.fetch_sub(1);
        } else {
          for (int i = 0; i < 64; ++i) TANDEM_PAUSE();
        }
      }
    }
    seen = now;
    if (stop_.load()) return;
  }
}

}  // namespace tandem
