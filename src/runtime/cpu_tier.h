// The kernel tiers, best last within each instruction set (runtime/cpu_features.h detects them and
// explains who picks one). A header of its own, with no includes: the kernel headers that take a
// tier are also read by the SIMD translation units, which must hold no library code
// (CMakeLists.txt, matmul_amx.cpp).
//
// Two families share the enum: x86-64 (Avx2 < Avx512Vnni < Amx) and Arm64 (Neon < Dotprod < I8mm),
// with Scalar below both. The order is only meaningful inside a family, so no kernel dispatch
// compares tiers with < or >= directly: it asks tier_has(tier, floor), which is false across
// families (an Arm tier never reaches an AVX kernel, an x86 tier never a NEON one, whatever the
// numbers say).
#pragma once

// Which family this build's own kernels belong to: the x86 SIMD files are compiled only for x86,
// the NEON ones only for Arm64 (CMakeLists.txt), so dispatch code calls each only under its macro.
#if defined(__x86_64__) || defined(__i386__)
#define TANDEM_ARCH_X86 1
#elif defined(__aarch64__)
#define TANDEM_ARCH_ARM64 1
#endif

namespace tandem {

enum class CpuTier { Scalar = 0, Avx2 = 1, Avx512Vnni = 2, Amx = 3, Neon = 4, Dotprod = 5, I8mm = 6 };

enum class CpuIsa { Any, X86, Arm64 };

// Scalar runs anywhere; every other tier belongs to one instruction set.
constexpr CpuIsa tier_isa(CpuTier t) {
  return t == CpuTier::Scalar ? CpuIsa::Any : t <= CpuTier::Amx ? CpuIsa::X86 : CpuIsa::Arm64;
}

// Whether a kernel written for `floor` may run on tier t: the scalar kernels always; otherwise
// only a tier of floor's own family at or above it.
constexpr bool tier_has(CpuTier t, CpuTier floor) {
  return floor == CpuTier::Scalar || (tier_isa(t) == tier_isa(floor) && t >= floor);
}

// The tiers of this build's instruction set, lowest first (Scalar, then the family's own); a
// test or bench that walks the tiers walks these.
#if defined(TANDEM_ARCH_ARM64)
inline constexpr CpuTier kBuildTiers[] = {CpuTier::Scalar, CpuTier::Neon, CpuTier::Dotprod, CpuTier::I8mm};
#elif defined(TANDEM_ARCH_X86)
inline constexpr CpuTier kBuildTiers[] = {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512Vnni, CpuTier::Amx};
#else
inline constexpr CpuTier kBuildTiers[] = {CpuTier::Scalar};
#endif

}  // namespace tandem
