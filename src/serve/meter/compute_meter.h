// What the engine's steps cost in CPU time and package energy (issue 27, energy figures;
// serving.md §5: RequestStats::cpu_ms and energy_j).
//
// The compute threads are the scheduler thread (thread 0 of every parallel_for: it runs a step's
// sampling, grammar and the tasks it claims) and the workers of the model's and the vision
// encoder's thread pools; their CPU clocks (runtime/cpu_clock.h) are read before and after every
// step and the difference goes to the request of the slot that ran it (one step at a time, so
// nothing else runs on these threads meanwhile). The HTTP threads (parsing, tokenizing, writing
// answers) are not compute threads: process_cpu_seconds counts them with everything else.
//
// The set of threads is fixed when the engine starts: whatever replaces the model's thread pool
// (an unload and reload) must give the engine a new ComputeMeter, or the new workers go uncounted.
//
// Package energy (runtime/energy_meter.h) is read the same way where RAPL is readable; it is the
// machine's, so it includes other processes running during the step. Unavailable: nullopt
// (null in JSON), never 0.
#pragma once

#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cpu_clock.h"
#include "runtime/energy_meter.h"
#include "serve/meter/request_stats.h"

namespace tandem::serve {

struct MeterReading {
  int64_t cpu_ns = 0;             // the compute threads' CPU time
  std::optional<double> joules;   // package energy since the meter started
};

// A request's share: the sum over the steps that ran it.
struct RequestSpend {
  int64_t cpu_ns = 0;
  double joules = 0;
  bool energy = true;  // every step had both energy readings
  bool metered = false;

  void add(const MeterReading& from, const MeterReading& to);
  // cpu_ms; energy_j only when every step of the request was metered with energy.
  void to_stats(RequestStats& s) const;
};

// The engine-wide figures (GET /metrics, GET /props).
struct EnergyFigures {
  double compute_cpu_seconds = 0;        // the compute threads, since the engine started (idle work too)
  double process_cpu_seconds = 0;        // every thread of the process, since it started
  int compute_threads = 0;
  std::optional<double> package_joules;  // all packages, since the engine started; nullopt: unavailable
  std::string energy_unavailable;        // why, when it is
  std::vector<std::string> energy_zones; // the package zones read
};

class ComputeMeter {
 public:
  ComputeMeter(ThreadCpuClock compute_threads, const std::string& powercap_root);
  // Another compute thread (the scheduler, once started). Before any read from another thread.
  void add_thread(clockid_t clock);
  MeterReading read();
  EnergyFigures figures();

 private:
  ThreadCpuClock clock_;
  int64_t cpu_base_ns_ = 0;  // the threads' CPU before the meter started (model load, packing)
  EnergyMeter energy_;
};

}  // namespace tandem::serve
