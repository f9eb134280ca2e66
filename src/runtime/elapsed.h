#pragma once
// Elapsed wall time in milliseconds, as every meter of the runtime reports it (steady clock: the
// system clock can jump).
#include <chrono>

namespace tandem {

using SteadyClock = std::chrono::steady_clock;

inline double ms_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
inline double ms_since(SteadyClock::time_point t0) { return ms_between(t0, SteadyClock::now()); }

}  // namespace tandem
