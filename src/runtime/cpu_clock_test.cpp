#include "runtime/cpu_clock.h"

#include <gtest/gtest.h>

#include <atomic>

#include "runtime/thread_pool.h"

namespace tandem {
namespace {

// Spins until the calling thread's own CPU clock has advanced by ns.
void burn_cpu_ns(int64_t ns) {
  const int64_t until = cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile uint64_t x = 0;
  while (cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
    for (int i = 0; i < 1000; ++i) x = x + static_cast<uint64_t>(i);
}

TEST(ThreadCpuClock, CountsTheCallingThreadByItsClockId) {
  ThreadCpuClock clock({this_thread_cpu_clock()});
  EXPECT_EQ(clock.threads(), 1u);
  const int64_t before = clock.ns();
  burn_cpu_ns(20'000'000);
  EXPECT_GE(clock.ns() - before, 20'000'000);
  // The process counts every thread: read the thread's clock first (the process's, read after it,
  // has counted at least as much; read the other way round, the thread's runs on in between).
  const int64_t thread_ns = clock.ns();
  EXPECT_GE(process_cpu_ns(), thread_ns);
}

// The pool hands out its workers' clocks, and another thread can read them: a worker that ran a
// task of known CPU time shows at least that much.
TEST(ThreadCpuClock, ReadsThePoolWorkersClocks) {
  ThreadPool pool(3);
  ASSERT_EQ(pool.worker_cpu_clocks().size(), 2u);  // the caller is thread 0 and has no worker clock
  ThreadCpuClock workers(pool.worker_cpu_clocks());
  const int64_t before = workers.ns();
  // Task 0 (claimed first, by the caller or a worker) waits until all three tasks are claimed, so
  // at least two of them run on workers; each worker task burns 20 ms of its thread's CPU.
  std::atomic<int> claimed{0};
  std::atomic<int> on_workers{0};
  pool.parallel_for(3, [&](int64_t, int thread) {
    claimed.fetch_add(1);
    while (claimed.load() < 3) {
    }
    if (thread != 0) {
      on_workers.fetch_add(1);
      burn_cpu_ns(20'000'000);
    }
  });
  ASSERT_GE(on_workers.load(), 2);
  EXPECT_GE(workers.ns() - before, int64_t{on_workers.load()} * 20'000'000);
}

TEST(ThreadCpuClock, ASingleThreadPoolHasNoWorkerClocks) {
  ThreadPool pool(1);
  EXPECT_TRUE(pool.worker_cpu_clocks().empty());
  EXPECT_EQ(ThreadCpuClock(pool.worker_cpu_clocks()).ns(), 0);
}

}  // namespace
}  // namespace tandem
