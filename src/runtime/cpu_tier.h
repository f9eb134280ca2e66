// The kernel tiers, best last (runtime/cpu_features.h detects them and explains who picks one).
// A header of its own, with no includes: the kernel headers that take a tier are also read by
// the SIMD translation units, which must hold no library code (CMakeLists.txt, matmul_amx.cpp).
#pragma once

namespace tandem {

enum class CpuTier { Scalar = 0, Avx2 = 1, Avx512Vnni = 2, Amx = 3 };

}  // namespace tandem
