// C = A · B in float32 for row-major A [M x K] and B [K x N] (each row its own stride): the
// vision encoder's attention products, Q·Kᵀ (B = K transposed per head) and P·V (B = V as it
// lies in the QKV rows). kernels::matmul is built for weight matrices (rows of a ggml type
// against token columns, ~d = 64 long dot products here); these products have a short inner
// dimension or a long one with few outputs, where a register-blocked outer-product kernel keeps
// the FMA units busy. Single-threaded: the caller splits the work (attention: heads x query
// blocks).
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// C[i*ldc + j] = sum_k A[i*lda + k] * B[k*ldb + j] for i < M, j < N.
void gemm_f32(CpuTier tier, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
              int64_t N, int64_t K);
// The scalar reference (k ascending, float accumulation).
void gemm_f32_ref(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
                  int64_t K);

}  // namespace tandem::kernels
