// The SIMD bodies of gemm_f32 (gemm_f32.h), one translation unit per tier (gemm_f32_avx512.cpp,
// gemm_f32_avx2.cpp), called only after the tier dispatch.
#pragma once

#include <cstdint>

namespace tandem::kernels {
namespace avx512 {
void gemm_f32(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
              int64_t K);
}
namespace avx2 {
void gemm_f32(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
              int64_t K);
}
}  // namespace tandem::kernels
