// What the CPU (and the OS) let us use, and which kernel tier runs.
//
// Tiers, best first: on x86-64 AMX (int8/bf16 tiles) → AVX-512 VNNI → AVX2 (+FMA/F16C) → scalar;
// on Arm64 I8mm (SMMLA, with SDOT) → Dotprod (SDOT/UDOT) → Neon (Armv8.0 Advanced SIMD) → scalar.
// There is no process-wide tier. Each model picks its tier once, when it is loaded
// (LoadOptions::tier in model/qwen35/qwen35_model.h, default default_cpu_tier() below), and its
// kernel context (kernels::KernelContext::tier) hands it to every kernel call; a kernel
// called outside a model takes the tier as an argument. So every tier can be tested and
// benchmarked on one machine, side by side in one process: TANDEM_CPU_PATH lowers the
// default, a tool's --cpu-path picks the tier of the model it loads, a test constructs a
// model or a KernelContext with the tier it tests. A tier of the other instruction set (avx2 on
// an Arm phone, neon on x86) is never taken: clamp_to_machine lowers it to scalar and
// TANDEM_CPU_PATH reports and ignores it (runtime/cpu_tier.h: tier_has).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/cpu_tier.h"

namespace tandem {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512bf16 = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;  // CPU support and OS permission granted
  // Arm64, from the kernel's hwcaps (getauxval AT_HWCAP / AT_HWCAP2): Advanced SIMD, SDOT/UDOT
  // (HWCAP_ASIMDDP), SMMLA/UMMLA (HWCAP2_I8MM).
  bool asimd = false, asimddp = false, i8mm = false;

  CpuTier best_tier() const;
  std::string describe() const;
};

// Detected once (x86: cpuid + xgetbv; for AMX also asks the kernel for permission to use
// the tile state, arch_prctl(ARCH_REQ_XCOMP_PERM); Arm64: the hwcaps the kernel reports, which
// is also what qemu-user's -cpu model sets).
const CpuFeatures& cpu_features();

const char* cpu_tier_name(CpuTier t);
// "scalar", "avx2", "avx512", "amx", "neon", "dotprod", "i8mm" (any build: a name of the other
// instruction set parses, and is then lowered to scalar by clamp_to_machine).
std::optional<CpuTier> cpu_tier_from_name(std::string_view name);
// The names above as one comma-separated list, for error messages and --help.
const char* cpu_tier_names();

// The tier a model loads with unless told otherwise: min(best, TANDEM_CPU_PATH if set). The
// variable is read once (an unknown name, or one of the other instruction set, is reported on
// stderr and ignored); nothing sets it.
CpuTier default_cpu_tier();
// t lowered to the best tier this machine has: a kernel handed a tier above it would run
// instructions the CPU lacks. A tier of the other instruction set becomes Scalar. Whoever holds a tier for kernels (a model, a KernelContext)
// holds a clamped one; a test that walks the tiers skips those where clamp_to_machine(t) != t.
CpuTier clamp_to_machine(CpuTier t);

}  // namespace tandem
