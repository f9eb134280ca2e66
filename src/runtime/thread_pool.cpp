#include "runtime/thread_pool.h"

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
  acks_.reset(new Ack[static_cast<size_t>(n_threads_)]);
  for (int i = 1; i < n_threads_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::do_tasks(int thread) {
  for (;;) {
    const int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    fn_(ctx_, t, thread);
  }
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  const uint64_t gen = generation_.fetch_add(1) + 1;  // publishes the job (seq_cst)
  if (sleepers_.load() > 0) generation_.notify_all();
  do_tasks(0);
  for (int i = 1; i < n_threads_; ++i)
    while (acks_[i].gen.load(std::memory_order_acquire) != gen) TANDEM_PAUSE();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      // Spin briefly: the next operation of a pass usually follows within microseconds.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us());
      while ((gen = generation_.load(std::memory_order_acquire)) == seen) {
        if (std::chrono::steady_clock::now() >= until) {
          sleepers_.fetch_add(1);
          generation_.wait(seen);  // futex; the publisher notifies when sleepers_ > 0
          sleepers_.fetch_sub(1);
        } else {
          for (int i = 0; i < 64; ++i) TANDEM_PAUSE();
        }
      }
    }
    seen = gen;
    if (stop_.load()) return;
    do_tasks(index);
    acks_[index].gen.store(seen, std::memory_order_release);
  }
}

}  // namespace tandem
