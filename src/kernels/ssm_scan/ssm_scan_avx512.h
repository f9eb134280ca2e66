// AVX-512 bodies of the Mamba2 scan (ssm_scan_avx512.cpp, compiled with the AVX-512 flags of
// CMakeLists.txt; no library code there). Call only after the dispatch in ssm_scan.cpp has checked
// the tier and the shape requirements stated per function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/ssm_scan/ssm_scan.h"

namespace tandem::kernels::avx512 {

// Per-token scan, ds a multiple of 16. ws: at least 2*T floats.
void ssm_scan(const SsmScanInput& in, float* state, float* ws);

// Chunked scan, ds a multiple of 16, chunk >= 1. ws: ssm_scan_chunked_workspace_floats floats,
// 64-byte aligned.
size_t ssm_scan_chunked_workspace_floats(const SsmScanInput& in, int chunk);
void ssm_scan_chunked(const SsmScanInput& in, float* state, int chunk, float* ws);

}  // namespace tandem::kernels::avx512
