// Helpers the kernel test suites share (issue 52): the CPU tiers a test walks, and the relative
// difference it bounds — what the delta-rule, scan, conv and matmul tests each wrote for themselves.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/cpu_features.h"

namespace tandem::kernels {

// The tiers this build has that this machine runs (Scalar .. best), each handed to the kernels a
// test checks; a tier the machine would clamp lower is left out.
inline std::vector<CpuTier> machine_tiers() {
  std::vector<CpuTier> v;
  for (CpuTier t : kBuildTiers)
    if (clamp_to_machine(t) == t) v.push_back(t);
  return v;
}

// max |a - b| / max |b|, in double, over a's elements.
template <typename A, typename B>
double rel_diff(const A& a, const B& b) {
  double mx = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mx = std::max(mx, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    ref = std::max(ref, std::fabs(static_cast<double>(b[i])));
  }
  return mx / std::max(ref, 1e-30);
}

}  // namespace tandem::kernels
