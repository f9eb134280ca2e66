// Package energy from the kernel's RAPL counters (issue 27, energy figures), where it exposes them:
// /sys/class/powercap/intel-rapl:N/energy_uj, one top-level zone per CPU package, its `name`
// "package-N" (AMD's Zen kernels expose their package counters under the same intel-rapl control
// type). Subzones (core, uncore, dram: intel-rapl:N:M) are inside their package and not added;
// "psys" (the platform) is not a package. A zone met twice under another interface
// (intel-rapl-mmio:N, the same counter) is counted once, the intel-rapl one kept.
//
// The counters are machine-wide: a package's energy includes every process running on it, so a
// per-request figure is the package energy spent while the request's steps ran, not the
// request's own share. They wrap at max_energy_range_uj: a delta that goes down has wrapped once
// (the meter sees at most one wrap between two reads; about 262 kJ on Intel parts, over an hour
// at 60 W, and the engine reads at every step and every /metrics scrape).
//
// Unavailable — reported as unavailable (null in JSON, absent from /metrics), never as 0 — when
// there is no powercap tree or no package zone, or any package zone's energy_uj or
// max_energy_range_uj cannot be read: since Linux 5.10 (CVE-2020-8694) energy_uj is readable by
// root only unless an administrator grants it, so an unprivileged server usually has no energy
// figures. One unreadable package of several makes it unavailable too: a partial sum would be a
// wrong figure. A read that fails later makes it unavailable from then on (reason() says why).
//
// The root is a parameter so that tests can point it at a fake sysfs tree. Thread-safe; a read
// is one pread per package zone on descriptors opened at construction, no allocation.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tandem {

inline constexpr const char* kPowercapRoot = "/sys/class/powercap";

class EnergyMeter {
 public:
  explicit EnergyMeter(const std::string& powercap_root = kPowercapRoot);
  ~EnergyMeter();
  EnergyMeter(const EnergyMeter&) = delete;
  EnergyMeter& operator=(const EnergyMeter&) = delete;

  bool available() const;
  // Why the figures are unavailable (empty when available).
  std::string reason() const;
  // The package zones read, e.g. {"intel-rapl:0 (package-0)"}.
  std::vector<std::string> zones() const;

  // Joules all package zones have counted since construction; nullopt when unavailable.
  std::optional<double> joules();

 private:
  struct Zone {
    std::string dir, name;
    int fd = -1;
    uint64_t max_range_uj = 0;
    uint64_t last_uj = 0;
    uint64_t total_uj = 0;  // since construction, wraps unfolded
  };
  mutable std::mutex mu_;
  std::vector<Zone> zones_;
  std::string reason_;
  void close_all();
};

}  // namespace tandem
