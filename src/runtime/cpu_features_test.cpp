// The tier families and the dispatcher's view of this machine (runtime/cpu_tier.h,
// cpu_features.h). Under qemu-user the CPU model decides the hwcaps, and scripts/arm64-tests.sh
// runs this once per model with TANDEM_EXPECT_TIER set to the tier that model must select.
#include "runtime/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace tandem {
namespace {

constexpr CpuTier kEveryTier[] = {CpuTier::Scalar, CpuTier::Avx2,    CpuTier::Avx512Vnni, CpuTier::Amx,
                                  CpuTier::Neon,   CpuTier::Dotprod, CpuTier::I8mm};

TEST(CpuTier, FamiliesNeverReachEachOther) {
  for (CpuTier a : kEveryTier)
    for (CpuTier b : kEveryTier) {
      const bool same = tier_isa(a) == tier_isa(b);
      const bool want = b == CpuTier::Scalar || (same && a >= b);
      EXPECT_EQ(tier_has(a, b), want) << cpu_tier_name(a) << " / " << cpu_tier_name(b);
    }
  EXPECT_FALSE(tier_has(CpuTier::Neon, CpuTier::Avx512Vnni));  // Neon's number is above Avx512Vnni's
  EXPECT_FALSE(tier_has(CpuTier::Amx, CpuTier::Neon));
  EXPECT_FALSE(tier_has(CpuTier::Scalar, CpuTier::Neon));
}

TEST(CpuTier, NamesRoundTrip) {
  for (CpuTier t : kEveryTier) {
    const auto back = cpu_tier_from_name(cpu_tier_name(t));
    ASSERT_TRUE(back) << cpu_tier_name(t);
    EXPECT_EQ(*back, t);
    EXPECT_NE(std::string(cpu_tier_names()).find(cpu_tier_name(t)), std::string::npos) << cpu_tier_name(t);
  }
  EXPECT_FALSE(cpu_tier_from_name("sve"));
}

// clamp_to_machine keeps a tier of this machine, lowers one above its best to the best, and
// turns one of the other instruction set into scalar.
TEST(CpuTier, ClampNeverLeavesTheMachinesFamily) {
  const CpuTier best = cpu_features().best_tier();
  for (CpuTier t : kEveryTier) {
    const CpuTier c = clamp_to_machine(t);
    EXPECT_TRUE(tier_has(best, c)) << cpu_tier_name(t) << " -> " << cpu_tier_name(c);
    const CpuTier want = tier_has(best, t)                                              ? t
                         : best != CpuTier::Scalar && tier_isa(t) == tier_isa(best) ? best
                                                                                    : CpuTier::Scalar;
    EXPECT_EQ(c, want) << cpu_tier_name(t);
  }
#if defined(TANDEM_ARCH_ARM64)
  EXPECT_EQ(tier_isa(best), CpuIsa::Arm64) << "every Arm64 core has Advanced SIMD: " << cpu_features().describe();
#endif
}

// The tier this CPU (or qemu CPU model) must select, when the caller says which: the Arm64 step
// of scripts/test.sh runs -cpu cortex-a53 (neon), a dotprod-only model and -cpu max (i8mm).
TEST(CpuFeatures, BestTierIsTheExpectedOne) {
  const char* want = std::getenv("TANDEM_EXPECT_TIER");
  if (!want || !*want) GTEST_SKIP() << "TANDEM_EXPECT_TIER not set; this machine: " << cpu_features().describe();
  EXPECT_STREQ(cpu_tier_name(cpu_features().best_tier()), want) << cpu_features().describe();
}

}  // namespace
}  // namespace tandem
