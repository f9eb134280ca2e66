#include "runtime/energy_meter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

namespace tandem {

namespace {
namespace fs = std::filesystem;

// Reads an unsigned decimal counter from the start of an open sysfs file (sysfs regenerates the
// value at offset 0). false with errno's text in *err when it cannot.
bool read_counter(int fd, uint64_t& out, std::string* err) {
  char buf[32];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) {
    if (err) *err = n < 0 ? std::strerror(errno) : "empty";
    return false;
  }
  buf[n] = '\0';
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(buf, &end, 10);
  if (end == buf || errno != 0) {
    if (err) *err = "not a number";
    return false;
  }
  out = v;
  return true;
}

bool read_file_counter(const fs::path& p, uint64_t& out, std::string* err) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (err) *err = std::strerror(errno);
    return false;
  }
  const bool ok = read_counter(fd, out, err);
  ::close(fd);
  return ok;
}

// "intel-rapl:0" -> true; "intel-rapl:0:1" (a subzone), "intel-rapl" -> false.
bool top_level_zone(const std::string& dir) {
  const size_t colon = dir.find(':');
  if (colon == std::string::npos || colon + 1 >= dir.size()) return false;
  return std::all_of(dir.begin() + static_cast<std::ptrdiff_t>(colon) + 1, dir.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}
}  // namespace

EnergyMeter::EnergyMeter(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    reason_ = "no RAPL: " + root + " does not exist (no powercap support)";
    return;
  }
  // Package zones by name; the intel-rapl interface wins over another one with the same zone.
  std::map<std::string, std::string> by_name;  // name -> directory
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) dirs.push_back(e.path().filename().string());
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& d : dirs) {
    if (!top_level_zone(d)) continue;
    std::ifstream f(fs::path(root) / d / "name");
    std::string name;
    if (!std::getline(f, name) || name.rfind("package", 0) != 0) continue;
    auto it = by_name.find(name);
    if (it == by_name.end()) by_name.emplace(name, d);
    else if (d.rfind("intel-rapl:", 0) == 0) it->second = d;
  }
  if (by_name.empty()) {
    reason_ = "no RAPL: no package zone under " + root;
    return;
  }
  for (const auto& [name, dir] : by_name) {
    Zone z;
    z.dir = dir;
    z.name = name;
    const fs::path base = fs::path(root) / dir;
    std::string err;
    if (!read_file_counter(base / "max_energy_range_uj", z.max_range_uj, &err)) {
      reason_ = "RAPL not readable: " + (base / "max_energy_range_uj").string() + ": " + err;
      break;
    }
    z.fd = ::open((base / "energy_uj").c_str(), O_RDONLY | O_CLOEXEC);
    if (z.fd < 0 || !read_counter(z.fd, z.last_uj, &err)) {
      if (z.fd < 0) err = std::strerror(errno);
      reason_ = "RAPL not readable: " + (base / "energy_uj").string() + ": " + err;
      if (z.fd >= 0) ::close(z.fd);
      break;
    }
    zones_.push_back(std::move(z));
  }
  if (!reason_.empty()) close_all();
}

EnergyMeter::~EnergyMeter() { close_all(); }

void EnergyMeter::close_all() {
  for (Zone& z : zones_)
    if (z.fd >= 0) ::close(z.fd);
  zones_.clear();
}

bool EnergyMeter::available() const {
  std::lock_guard lk(mu_);
  return reason_.empty();
}

std::string EnergyMeter::reason() const {
  std::lock_guard lk(mu_);
  return reason_;
}

std::vector<std::string> EnergyMeter::zones() const {
  std::lock_guard lk(mu_);
  std::vector<std::string> out;
  for (const Zone& z : zones_) out.push_back(z.dir + " (" + z.name + ")");
  return out;
}

std::optional<double> EnergyMeter::joules() {
  std::lock_guard lk(mu_);
  if (!reason_.empty()) return std::nullopt;
  uint64_t sum = 0;
  for (Zone& z : zones_) {
    uint64_t now = 0;
    std::string err;
    if (!read_counter(z.fd, now, &err)) {
      reason_ = "RAPL read failed: " + z.dir + "/energy_uj: " + err;
      close_all();
      return std::nullopt;
    }
    // Went down: wrapped once at max_energy_range_uj (a last value above the range, which the
    // kernel never shows, counts from 0).
    if (now >= z.last_uj) z.total_uj += now - z.last_uj;
    else z.total_uj += (z.last_uj <= z.max_range_uj ? z.max_range_uj - z.last_uj : 0) + now;
    z.last_uj = now;
    sum += z.total_uj;
  }
  return static_cast<double>(sum) * 1e-6;
}

}  // namespace tandem
