#include "runtime/energy_meter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tandem {
namespace {
namespace fs = std::filesystem;

// A fake /sys/class/powercap in a temporary directory.
class FakePowercap {
 public:
  FakePowercap() {
    static int n = 0;
    root_ = fs::path(::testing::TempDir()) / ("tandem-powercap-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakePowercap() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root() const { return root_.string(); }
  // A zone directory with name, max_energy_range_uj and energy_uj.
  void zone(const std::string& dir, const std::string& name, uint64_t max_range, uint64_t energy) {
    fs::create_directories(root_ / dir);
    write(dir + "/name", name + "\n");
    write(dir + "/max_energy_range_uj", std::to_string(max_range) + "\n");
    set(dir, energy);
  }
  void set(const std::string& dir, uint64_t energy) { write(dir + "/energy_uj", std::to_string(energy) + "\n"); }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream f(root_ / rel, std::ios::trunc);  // same file, new contents: an open descriptor sees them
    f << text;
  }
  fs::path path(const std::string& rel) const { return root_ / rel; }

 private:
  fs::path root_;
};

TEST(EnergyMeter, NoPowercapTreeIsUnavailableNotZero) {
  EnergyMeter m(::testing::TempDir() + "/no-such-powercap-dir");
  EXPECT_FALSE(m.available());
  EXPECT_FALSE(m.joules().has_value());
  EXPECT_NE(m.reason().find("does not exist"), std::string::npos) << m.reason();
  EXPECT_TRUE(m.zones().empty());
}

TEST(EnergyMeter, OnlyPackageZonesCount) {
  FakePowercap p;
  p.zone("intel-rapl:0:0", "core", 1000000, 5);  // a subzone
  p.zone("intel-rapl:1", "psys", 1000000, 5);    // the platform, not a package
  EnergyMeter m(p.root());
  EXPECT_FALSE(m.available());
  EXPECT_NE(m.reason().find("no package zone"), std::string::npos) << m.reason();
  EXPECT_FALSE(m.joules().has_value());
}

TEST(EnergyMeter, SumsPackagesSinceConstructionAndUnfoldsAWrap) {
  FakePowercap p;
  p.zone("intel-rapl:0", "package-0", 10'000'000, 9'000'000);
  p.zone("intel-rapl:0:0", "core", 10'000'000, 123);      // inside package 0: not added
  p.zone("intel-rapl:1", "package-1", 20'000'000, 1'000'000);
  p.zone("intel-rapl-mmio:0", "package-0", 10'000'000, 42);  // package 0 again, another interface
  EnergyMeter m(p.root());
  ASSERT_TRUE(m.available()) << m.reason();
  EXPECT_EQ(m.zones(), (std::vector<std::string>{"intel-rapl:0 (package-0)", "intel-rapl:1 (package-1)"}));
  ASSERT_TRUE(m.joules().has_value());
  EXPECT_DOUBLE_EQ(*m.joules(), 0.0);
  p.set("intel-rapl:0", 9'500'000);  // +0.5 J
  p.set("intel-rapl:1", 3'000'000);  // +2 J
  EXPECT_DOUBLE_EQ(*m.joules(), 2.5);
  p.set("intel-rapl:0", 250'000);    // wrapped at 10 J: +0.5 J to the top, +0.25 J after
  EXPECT_DOUBLE_EQ(*m.joules(), 3.25);
  p.set("intel-rapl-mmio:0", 9'000'000);  // the duplicate is not read
  p.set("intel-rapl:0:0", 9'000'000);
  EXPECT_DOUBLE_EQ(*m.joules(), 3.25);
}

// energy_uj a directory stands for a file that cannot be read (root reads any file whatever its
// mode, so a chmod would not do): the meter is unavailable, naming the file.
TEST(EnergyMeter, AnUnreadablePackageMakesItUnavailable) {
  FakePowercap p;
  p.zone("intel-rapl:0", "package-0", 10'000'000, 100);
  fs::create_directories(p.path("intel-rapl:1"));
  p.write("intel-rapl:1/name", "package-1\n");
  p.write("intel-rapl:1/max_energy_range_uj", "10000000\n");
  fs::create_directories(p.path("intel-rapl:1/energy_uj"));
  EnergyMeter m(p.root());
  EXPECT_FALSE(m.available());
  EXPECT_FALSE(m.joules().has_value());  // no partial sum over the readable package
  EXPECT_NE(m.reason().find("intel-rapl:1/energy_uj"), std::string::npos) << m.reason();
}

TEST(EnergyMeter, APermissionDeniedFileIsUnavailable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a mode-000 file";
  FakePowercap p;
  p.zone("intel-rapl:0", "package-0", 10'000'000, 100);
  ASSERT_EQ(::chmod(p.path("intel-rapl:0/energy_uj").c_str(), 0), 0);
  EnergyMeter m(p.root());
  EXPECT_FALSE(m.available());
  EXPECT_NE(m.reason().find("Permission denied"), std::string::npos) << m.reason();
}

TEST(EnergyMeter, AReadThatFailsLaterMakesItUnavailableFromThen) {
  FakePowercap p;
  p.zone("intel-rapl:0", "package-0", 10'000'000, 100);
  EnergyMeter m(p.root());
  ASSERT_TRUE(m.joules().has_value());
  p.write("intel-rapl:0/energy_uj", "garbage\n");
  EXPECT_FALSE(m.joules().has_value());
  EXPECT_FALSE(m.available());
  EXPECT_NE(m.reason().find("read failed"), std::string::npos) << m.reason();
  p.set("intel-rapl:0", 200);
  EXPECT_FALSE(m.joules().has_value());
}

}  // namespace
}  // namespace tandem
