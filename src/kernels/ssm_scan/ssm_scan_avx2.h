// AVX2 body of the per-token Mamba2 scan (ssm_scan_avx2.cpp, compiled with -mavx2 -mfma; no library
// code there), for CPUs without AVX-512. Call only after ssm_scan.cpp's dispatch has checked the
// tier, and only for ds a multiple of 8.
#pragma once

#include <cstdint>

#include "kernels/ssm_scan/ssm_scan.h"

namespace tandem::kernels::avx2 {

// ws: at least 2*T floats.
void ssm_scan(const SsmScanInput& in, float* state, float* ws);

}  // namespace tandem::kernels::avx2
