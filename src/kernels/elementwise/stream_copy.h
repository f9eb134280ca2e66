// Copies whose destination is not read again soon (the rollback states a prompt pass keeps):
// non-temporal stores write whole lines to memory without first reading them into the caches
// and without evicting what the pass reads next.
#pragma once

#include <cstdint>

namespace tandem::kernels {

// dst[i] = src[i] for i < n; the ranges must not overlap. Streaming stores where dst is
// 16-byte aligned (any x86-64 has them), memcpy otherwise. Ends with a store fence, so the
// copy is visible to every thread once the call returns.
void copy_streaming(float* dst, const float* src, int64_t n);

}  // namespace tandem::kernels
