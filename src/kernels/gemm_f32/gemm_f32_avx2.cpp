// AVX2 gemm_f32: 4 rows x 16 columns of C in eight registers (two 8-lane halves); column tails
// through a zero-padded copy of the B row piece and a partial store.
#include <immintrin.h>

#include <cstring>

#include "kernels/gemm_f32/gemm_f32_simd.h"

namespace tandem::kernels::avx2 {
namespace {

template <int R>
void block(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t K, int64_t w) {
  __m256 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  alignas(32) float tail[16];
  for (int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    if (w < 16) {
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, b, static_cast<size_t>(w) * sizeof(float));
      b = tail;
    }
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      acc0[r] = _mm256_fmadd_ps(a, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(a, b1, acc1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (w == 16) {
      _mm256_storeu_ps(C + r * ldc, acc0[r]);
      _mm256_storeu_ps(C + r * ldc + 8, acc1[r]);
    } else {
      alignas(32) float out[16];
      _mm256_store_ps(out, acc0[r]);
      _mm256_store_ps(out + 8, acc1[r]);
      std::memcpy(C + r * ldc, out, static_cast<size_t>(w) * sizeof(float));
    }
  }
}

}  // namespace

void gemm_f32(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
              int64_t K) {
  for (int64_t j = 0; j < N; j += 16) {
    const int64_t w = N - j < 16 ? N - j : 16;
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) block<4>(A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, K, w);
    for (; i < M; ++i) block<1>(A + i * lda, lda, B + j, ldb, C + i * ldc + j, ldc, K, w);
  }
}

}  // namespace tandem::kernels::avx2
