#include "kernels/gemm_f32/gemm_f32.h"

#include "kernels/gemm_f32/gemm_f32_simd.h"

namespace tandem::kernels {

void gemm_f32_ref(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
                  int64_t K) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * lda + k];
      const float* b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
}

void gemm_f32(CpuTier tier, const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M,
              int64_t N, int64_t K) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::gemm_f32(A, lda, B, ldb, C, ldc, M, N, K);
  if (tier_has(tier, CpuTier::Avx2)) return avx2::gemm_f32(A, lda, B, ldb, C, ldc, M, N, K);
#endif
  gemm_f32_ref(A, lda, B, ldb, C, ldc, M, N, K);
}

}  // namespace tandem::kernels
