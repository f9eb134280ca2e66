#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace tandem {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 50; ++rep) pool.parallel_for(n, [&](int64_t t, int) { hits[t].fetch_add(1); });
      for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[t].load(), 50) << "threads " << threads << " n " << n;
    }
  }
}

TEST(ThreadPool, ThreadIndexIsInRangeAndWorkersParticipate) {
  ThreadPool pool(2);
  std::atomic<int> bad{0};
  std::vector<std::atomic<int>> by_thread(2);
  for (int rep = 0; rep < 200; ++rep)
    pool.parallel_for(64, [&](int64_t, int th) {
      if (th < 0 || th >= 2) bad.fetch_add(1);
      else by_thread[th].fetch_add(1);
      volatile int spin = 0;
      for (int i = 0; i < 2000; ++i) spin = spin + i;
    });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(by_thread[0].load() + by_thread[1].load(), 200 * 64);
}

TEST(ThreadPool, WorksWithSpinDisabledAndBlockedWorkers) {
  ThreadPool pool(2, /*spin_us=*/0);
  std::atomic<int64_t> sum{0};
  for (int rep = 0; rep < 300; ++rep) pool.parallel_for(8, [&](int64_t t, int) { sum.fetch_add(t); });
  EXPECT_EQ(sum.load(), 300 * 28);
}

}  // namespace
}  // namespace tandem
