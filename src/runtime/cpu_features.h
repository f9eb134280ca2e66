// What the CPU (and the OS) let us use, and which kernel tier runs.
//
// Tiers, best first: AMX (int8/bf16 tiles) → AVX-512 VNNI → AVX2 (+FMA/F16C) → scalar.
// The tier is chosen once at start-up: the best the machine has, lowered by the
// TANDEM_CPU_PATH environment variable or a tool's --cpu-path flag, so that every
// tier can be tested and benchmarked on one machine. An Arm NEON tier would add
// its own enum value and files; nothing here assumes x86 except the detection.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tandem {

enum class CpuTier { Scalar = 0, Avx2 = 1, Avx512Vnni = 2, Amx = 3 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;  // CPU support and OS permission granted

  CpuTier best_tier() const;
  std::string describe() const;
};

// Detected once (cpuid + xgetbv; for AMX also asks the kernel for permission to use
// the tile state, arch_prctl(ARCH_REQ_XCOMP_PERM)).
const CpuFeatures& cpu_features();

const char* cpu_tier_name(CpuTier t);
std::optional<CpuTier> cpu_tier_from_name(std::string_view name);  // "scalar", "avx2", "avx512", "amx"

// The tier kernels use now. Defaults to min(best, TANDEM_CPU_PATH if set).
CpuTier active_cpu_tier();
// Forces a tier (clamped to what the machine supports); returns the tier actually set.
CpuTier set_cpu_tier(CpuTier t);

}  // namespace tandem
