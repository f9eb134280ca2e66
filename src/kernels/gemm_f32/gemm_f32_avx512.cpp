// AVX-512 gemm_f32: 6 rows x 32 or 64 columns of C in registers; per k, two or four loads of B
// and six broadcasts (the broadcast folds into the FMA's memory operand). Column tails
// run with masked loads and stores, row tails with fewer rows.
#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm_f32/gemm_f32_simd.h"

namespace tandem::kernels::avx512 {
namespace {

// Accumulators as named values, not an array: GCC keeps an array of __m512 on the stack and
// stores it back every iteration. Rows x (16-lane column groups): 6 x 2 for narrow or short
// products, 6 x 4 (24 accumulators) where N >= 64, so that a long K streams each B row once per
// six rows of A (P·V: K = n_pos, N = d = 64).
#define TANDEM_GEMM_ROW(r)                                                   \
  do {                                                                       \
    const __m512 a = _mm512_set1_ps(A[(r) * lda + k]);                       \
    c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                               \
    c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);                               \
    if constexpr (G == 4) {                                                  \
      c##r##2 = _mm512_fmadd_ps(a, b2, c##r##2);                             \
      c##r##3 = _mm512_fmadd_ps(a, b3, c##r##3);                             \
    }                                                                        \
  } while (0)

template <int G, bool kAccumulate>
void block6(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t K, const __mmask16* m) {
  const __m512 z = _mm512_setzero_ps();
  __m512 c00 = z, c01 = z, c02 = z, c03 = z, c10 = z, c11 = z, c12 = z, c13 = z, c20 = z, c21 = z, c22 = z, c23 = z;
  __m512 c30 = z, c31 = z, c32 = z, c33 = z, c40 = z, c41 = z, c42 = z, c43 = z, c50 = z, c51 = z, c52 = z, c53 = z;
  if constexpr (kAccumulate) {
    auto ld = [&](int r, int g) { return g < G ? _mm512_maskz_loadu_ps(m[g], C + r * ldc + 16 * g) : z; };
    c00 = ld(0, 0), c01 = ld(0, 1), c02 = ld(0, 2), c03 = ld(0, 3), c10 = ld(1, 0), c11 = ld(1, 1), c12 = ld(1, 2);
    c13 = ld(1, 3), c20 = ld(2, 0), c21 = ld(2, 1), c22 = ld(2, 2), c23 = ld(2, 3), c30 = ld(3, 0), c31 = ld(3, 1);
    c32 = ld(3, 2), c33 = ld(3, 3), c40 = ld(4, 0), c41 = ld(4, 1), c42 = ld(4, 2), c43 = ld(4, 3), c50 = ld(5, 0);
    c51 = ld(5, 1), c52 = ld(5, 2), c53 = ld(5, 3);
  }
  for (int64_t k = 0; k < K; ++k) {
    const float* b = B + k * ldb;
    const __m512 b0 = _mm512_maskz_loadu_ps(m[0], b), b1 = _mm512_maskz_loadu_ps(m[1], b + 16);
    __m512 b2 = z, b3 = z;
    if constexpr (G == 4) {
      b2 = _mm512_maskz_loadu_ps(m[2], b + 32);
      b3 = _mm512_maskz_loadu_ps(m[3], b + 48);
    }
    TANDEM_GEMM_ROW(0);
    TANDEM_GEMM_ROW(1);
    TANDEM_GEMM_ROW(2);
    TANDEM_GEMM_ROW(3);
    TANDEM_GEMM_ROW(4);
    TANDEM_GEMM_ROW(5);
  }
  const __m512 acc[6][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23},
                            {c30, c31, c32, c33}, {c40, c41, c42, c43}, {c50, c51, c52, c53}};
  for (int r = 0; r < 6; ++r)
    for (int g = 0; g < G; ++g) _mm512_mask_storeu_ps(C + r * ldc + 16 * g, m[g], acc[r][g]);
}
#undef TANDEM_GEMM_ROW

template <int G, bool kAccumulate>
void block1(const float* A, const float* B, int64_t ldb, float* C, int64_t K, const __mmask16* m) {
  __m512 c[G];
  for (int g = 0; g < G; ++g) c[g] = kAccumulate ? _mm512_maskz_loadu_ps(m[g], C + 16 * g) : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 a = _mm512_set1_ps(A[k]);
    for (int g = 0; g < G; ++g) c[g] = _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(m[g], B + k * ldb + 16 * g), c[g]);
  }
  for (int g = 0; g < G; ++g) _mm512_mask_storeu_ps(C + 16 * g, m[g], c[g]);
}


template <int G, bool kAccumulate>
void panel(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t K,
           const __mmask16* m) {
  int64_t i = 0;
  for (; i + 6 <= M; i += 6) block6<G, kAccumulate>(A + i * lda, lda, B, ldb, C + i * ldc, ldc, K, m);
  for (; i < M; ++i) block1<G, kAccumulate>(A + i * lda, B, ldb, C + i * ldc, K, m);
}

// A long K (P·V: every patch) runs in slices of kSliceK rows of B, each slice against all rows
// of A before the next, so the slice (at most 256 KiB for 64 columns) stays in L2 while six rows
// of A at a time stream past it; the first slice stores C, the others add to it.
constexpr int64_t kSliceK = 1024;

template <int G>
void columns(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t K,
             const __mmask16* m) {
  for (int64_t k0 = 0; k0 < K; k0 += kSliceK) {
    const int64_t kn = std::min(kSliceK, K - k0);
    if (k0 == 0) panel<G, false>(A, lda, B, ldb, C, ldc, M, kn, m);
    else panel<G, true>(A + k0, lda, B + k0 * ldb, ldb, C, ldc, M, kn, m);
  }
}

}  // namespace

void gemm_f32(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc, int64_t M, int64_t N,
              int64_t K) {
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  for (int64_t j = 0; j < N;) {
    const int64_t w = std::min<int64_t>(N - j, N >= 64 ? 64 : 32);
    __mmask16 m[4];
    for (int g = 0; g < 4; ++g) {
      const int64_t lanes = std::clamp<int64_t>(w - 16 * g, 0, 16);
      m[g] = lanes == 16 ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1);
    }
    if (w > 32) columns<4>(A, lda, B + j, ldb, C + j, ldc, M, K, m);
    else columns<2>(A, lda, B + j, ldb, C + j, ldc, M, K, m);
    j += w;
  }
}

}  // namespace tandem::kernels::avx512
