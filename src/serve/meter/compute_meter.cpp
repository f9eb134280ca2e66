#include "serve/meter/compute_meter.h"

#include <algorithm>
#include <utility>

namespace tandem::serve {

void RequestSpend::add(const MeterReading& from, const MeterReading& to) {
  metered = true;
  // A thread that exited during the step (a pool rebuilt) reads 0: never a negative share.
  cpu_ns += std::max<int64_t>(0, to.cpu_ns - from.cpu_ns);
  if (from.joules && to.joules) joules += *to.joules - *from.joules;
  else energy = false;
}

void RequestSpend::to_stats(RequestStats& s) const {
  s.cpu_ms = static_cast<double>(cpu_ns) * 1e-6;
  s.energy_j = metered && energy ? std::optional<double>(joules) : std::nullopt;
}

ComputeMeter::ComputeMeter(ThreadCpuClock compute_threads, const std::string& powercap_root)
    : clock_(std::move(compute_threads)), energy_(powercap_root) {
  cpu_base_ns_ = clock_.ns();
}

void ComputeMeter::add_thread(clockid_t clock) {
  cpu_base_ns_ += cpu_clock_ns(clock);
  clock_.add(clock);
}

MeterReading ComputeMeter::read() { return MeterReading{clock_.ns(), energy_.joules()}; }

EnergyFigures ComputeMeter::figures() {
  EnergyFigures f;
  f.compute_cpu_seconds = static_cast<double>(clock_.ns() - cpu_base_ns_) * 1e-9;
  f.process_cpu_seconds = static_cast<double>(process_cpu_ns()) * 1e-9;
  f.compute_threads = static_cast<int>(clock_.threads());
  f.package_joules = energy_.joules();
  f.energy_unavailable = energy_.reason();
  f.energy_zones = energy_.zones();
  return f;
}

}  // namespace tandem::serve
