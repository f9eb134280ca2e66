// What the CPU (and the OS) let us use, and which kernel tier runs.
//
// Tiers, best first: AMX (int8/bf16 tiles) → AVX-512 VNNI → AVX2 (+FMA/F16C) → scalar.
// There is no process-wide tier. Each model picks its tier once, when it is loaded
// (LoadOptions::tier in model/qwen35/qwen35_model.h, default default_cpu_tier() below), and its
// kernel context (kernels::KernelContext::tier) hands it to every kernel call; a kernel
// called outside a model takes the tier as an argument. So every tier can be tested and
// benchmarked on one machine, side by side in one process: TANDEM_CPU_PATH lowers the
// default, a tool's --cpu-path picks the tier of the model it loads, a test constructs a
// model or a KernelContext with the tier it tests. An Arm NEON tier would add its own enum
// value and files; nothing here assumes x86 except the detection.
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

  CpuTier best_tier() const;
  std::string describe() const;
};

// Detected once (cpuid + xgetbv; for AMX also asks the kernel for permission to use
// the tile state, arch_prctl(ARCH_REQ_XCOMP_PERM)).
const CpuFeatures& cpu_features();

const char* cpu_tier_name(CpuTier t);
std::optional<CpuTier> cpu_tier_from_name(std::string_view name);  // "scalar", "avx2", "avx512", "amx"

// The tier a model loads with unless told otherwise: min(best, TANDEM_CPU_PATH if set). The
// variable is read once (an unknown name is reported on stderr and ignored); nothing sets it.
CpuTier default_cpu_tier();
// t lowered to the best tier this machine has: a kernel handed a tier above it would run
// instructions the CPU lacks. Whoever holds a tier for kernels (a model, a KernelContext)
// holds a clamped one; a test that walks the tiers skips those where clamp_to_machine(t) != t.
CpuTier clamp_to_machine(CpuTier t);

}  // namespace tandem
