#include "runtime/resource_governor.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace tandem {

double CpuResourceGovernor::boottime_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

CpuResourceGovernor::CpuResourceGovernor(ThreadPool& pool, CpuGovernorOptions opt) : pool_(pool), opt_(opt) {
  std::lock_guard<std::mutex> lock(mu_);
  last_activity_ = boottime_seconds();
  acquire_locked();
  stats_.reacquires = 0;  // the initial acquisition is not a re-acquisition
  watcher_ = std::thread([this] { watch(); });
}

CpuResourceGovernor::~CpuResourceGovernor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  watcher_.join();
  if (latency_fd_ >= 0) ::close(latency_fd_);
}

void CpuResourceGovernor::acquire_locked() {
  pool_.set_spin_us(opt_.active_spin_us);
  if (opt_.dma_latency && latency_fd_ < 0) {
    // Writing 0 asks the kernel to keep CPUs out of deep C-states while the fd is open.
    const int fd = ::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      const int32_t zero = 0;
      if (::write(fd, &zero, sizeof(zero)) == static_cast<ssize_t>(sizeof(zero))) latency_fd_ = fd;
      else ::close(fd);
    }
  }
  stats_.latency_request_held = latency_fd_ >= 0;
  if (released_) {
    stats_.seconds_released += boottime_seconds() - released_since_;
    ++stats_.reacquires;
  }
  released_ = false;
  stats_.released = false;
}

void CpuResourceGovernor::release_locked() {
  pool_.set_spin_us(0);
  if (latency_fd_ >= 0) {
    ::close(latency_fd_);
    latency_fd_ = -1;
  }
  released_ = true;
  released_since_ = boottime_seconds();
  ++stats_.releases;
  stats_.released = true;
  stats_.latency_request_held = false;
}

void CpuResourceGovernor::begin_batch() {
  std::unique_lock<std::mutex> lock(mu_);
  if (released_) {
    const double t0 = boottime_seconds();
    acquire_locked();
    const double ms = (boottime_seconds() - t0) * 1e3;
    stats_.last_wake_latency_ms = ms;
    stats_.max_wake_latency_ms = std::max(stats_.max_wake_latency_ms, ms);
  }
  ++in_flight_;
  last_activity_ = boottime_seconds();
}

void CpuResourceGovernor::end_batch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    last_activity_ = boottime_seconds();
  }
  cv_.notify_all();  // the watcher re-arms its idle timer
}

bool CpuResourceGovernor::release_now() {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ > 0 || released_) return false;
  release_locked();
  return true;
}

void CpuResourceGovernor::set_idle_release_ms(int64_t ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    opt_.idle_release_ms = ms;
  }
  cv_.notify_all();
}

void CpuResourceGovernor::set_dma_latency(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  opt_.dma_latency = on;
  if (!on && latency_fd_ >= 0) {
    ::close(latency_fd_);
    latency_fd_ = -1;
  }
  if (on && !released_) acquire_locked();  // opens the request now if the device allows it
  stats_.latency_request_held = latency_fd_ >= 0;
}

void CpuResourceGovernor::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (released_ || in_flight_ > 0 || opt_.idle_release_ms <= 0) {
      cv_.wait(lock);  // nothing to time: sleep until a batch starts or ends
      continue;
    }
    const double idle = boottime_seconds() - last_activity_;
    const double limit = static_cast<double>(opt_.idle_release_ms) / 1e3;
    if (idle >= limit) {
      release_locked();
      continue;
    }
    // Timed waits run on the monotonic clock, which stops during suspend: wake at least
    // every 250 ms to re-read CLOCK_BOOTTIME so suspended time counts as idle.
    const double wait_s = std::min(limit - idle, 0.25);
    cv_.wait_for(lock, std::chrono::duration<double>(wait_s));
  }
}

GovernorStats CpuResourceGovernor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  GovernorStats s = stats_;
  if (released_) s.seconds_released += boottime_seconds() - released_since_;
  return s;
}

}  // namespace tandem
