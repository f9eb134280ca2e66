#include "runtime/cpu_clock.h"

#include <pthread.h>

namespace tandem {

int64_t cpu_clock_ns(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

clockid_t this_thread_cpu_clock() {
  clockid_t c{};
  if (pthread_getcpuclockid(pthread_self(), &c) != 0) return CLOCK_THREAD_CPUTIME_ID;
  return c;
}

int64_t process_cpu_ns() { return cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

int64_t ThreadCpuClock::ns() const {
  int64_t sum = 0;
  for (clockid_t c : clocks_) sum += cpu_clock_ns(c);
  return sum;
}

}  // namespace tandem
