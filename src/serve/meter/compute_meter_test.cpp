#include "serve/meter/compute_meter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model/test_support.h"
#include "serve/meter/request_totals.h"

namespace tandem::serve {
namespace {

TEST(RequestSpend, SumsTheStepsAndKeepsEnergyOnlyWhenEveryStepHadIt) {
  RequestSpend none;
  RequestStats s;
  s.energy_j = 1.0;  // overwritten
  none.to_stats(s);
  EXPECT_EQ(s.cpu_ms, 0.0);
  EXPECT_FALSE(s.energy_j.has_value()) << "a request no step ran has no energy figure";

  RequestSpend a;
  a.add({100'000, 1.0}, {2'100'000, 1.5});
  a.add({5'000'000, 2.0}, {6'000'000, 2.25});
  a.to_stats(s);
  EXPECT_DOUBLE_EQ(s.cpu_ms, 3.0);
  ASSERT_TRUE(s.energy_j.has_value());
  EXPECT_DOUBLE_EQ(*s.energy_j, 0.75);

  a.add({6'000'000, std::nullopt}, {7'000'000, std::nullopt});  // the meter became unavailable
  a.to_stats(s);
  EXPECT_DOUBLE_EQ(s.cpu_ms, 4.0);
  EXPECT_FALSE(s.energy_j.has_value()) << "a partial sum would be a wrong figure";
}

TEST(RequestTotals, EnergySumsOnlyTheRequestsWithAFigure) {
  RequestTotals t;
  RequestStats with, without;
  with.cpu_ms = 2;
  with.energy_j = 5;
  without.cpu_ms = 3;
  t.add(with);
  t.add(without);
  EXPECT_DOUBLE_EQ(t.cpu_ms, 5);
  EXPECT_DOUBLE_EQ(t.energy_j, 5);
  EXPECT_EQ(t.energy_requests, 1);
}

TEST(ComputeMeter, ReadsTheThreadsAndThePackageCounter) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / ("tandem-meter-" + std::to_string(::getpid()));
  test_support::write_fake_rapl(root, 100000000, 1000);
  ComputeMeter m(ThreadCpuClock{}, root.string());
  m.add_thread(this_thread_cpu_clock());
  const MeterReading a = m.read();
  ASSERT_TRUE(a.joules.has_value());
  test_support::set_rapl_energy(root, 2501000);
  volatile uint64_t x = 0;
  for (int i = 0; i < 5'000'000; ++i) x = x + static_cast<uint64_t>(i);
  const MeterReading b = m.read();
  EXPECT_GT(b.cpu_ns, a.cpu_ns);
  ASSERT_TRUE(b.joules.has_value());
  EXPECT_DOUBLE_EQ(*b.joules - *a.joules, 2.5);
  const EnergyFigures f = m.figures();
  EXPECT_EQ(f.compute_threads, 1);
  ASSERT_TRUE(f.package_joules.has_value());
  EXPECT_DOUBLE_EQ(*f.package_joules, 2.5);
  EXPECT_TRUE(f.energy_unavailable.empty());
  EXPECT_GT(f.compute_cpu_seconds, 0.0);
  EXPECT_GE(f.process_cpu_seconds, f.compute_cpu_seconds);
  fs::remove_all(root);

  ComputeMeter none(ThreadCpuClock{}, (root / "absent").string());
  EXPECT_FALSE(none.read().joules.has_value());
  EXPECT_FALSE(none.figures().package_joules.has_value());
  EXPECT_FALSE(none.figures().energy_unavailable.empty());
}

}  // namespace
}  // namespace tandem::serve
