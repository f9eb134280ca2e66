// The register-tiled float GEMM of the chunked recurrences on AVX-512 (the gated delta rule,
// delta_rule_avx512.cpp, and the Mamba2 SSD scan, ssm_scan_avx512.cpp): 6 rows x up to 64 columns of C
// in registers, with the triangular shortcuts the chunk products allow. Include only from a
// translation unit compiled with the AVX-512 flags. Everything here has internal linkage (an
// anonymous namespace), as in those files: no function compiled for AVX-512 can be picked by the
// linker for another translation unit.
#pragma once

#include <immintrin.h>
#include <stdint.h>

// GCC 12 warns about the deliberately undefined upper halves inside its own intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::avx512 {
namespace {

inline int imin(int a, int b) { return a < b ? a : b; }
inline int round16(int x) { return (x + 15) / 16 * 16; }

// GEMM micro-kernel: C[R x 16·NV] = cscale·C (or 0) + A[R x K] · B[K x 16·NV].
// A row-major (lda), B row-major (ldb), C row-major (ldc).
template <int R, int NV>
void micro(int K, const float* A, int64_t lda, const float* B, int64_t ldb, float* Cm, int64_t ldc, bool load_c,
           float cscale) {
  __m512 acc[R][NV];
  if (load_c) {
    const __m512 s = _mm512_set1_ps(cscale);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_mul_ps(_mm512_loadu_ps(Cm + r * ldc + 16 * v), s);
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int k = 0; k < K; ++k) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(B + k * ldb + 16 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(Cm + r * ldc + 16 * v, acc[r][v]);
}

using MicroFn = void (*)(int, const float*, int64_t, const float*, int64_t, float*, int64_t, bool, float);
constexpr int kMR = 6, kNV = 4;
const MicroFn kMicro[kMR][kNV] = {
    {micro<1, 1>, micro<1, 2>, micro<1, 3>, micro<1, 4>}, {micro<2, 1>, micro<2, 2>, micro<2, 3>, micro<2, 4>},
    {micro<3, 1>, micro<3, 2>, micro<3, 3>, micro<3, 4>}, {micro<4, 1>, micro<4, 2>, micro<4, 3>, micro<4, 4>},
    {micro<5, 1>, micro<5, 2>, micro<5, 3>, micro<5, 4>}, {micro<6, 1>, micro<6, 2>, micro<6, 3>, micro<6, 4>},
};

// C[M x N] = (load_c ? cscale·C : 0) + A · B, N a multiple of 16.
//  * k_tri: A is lower triangular in its last columns: the rows [r0, r0+R) of a block
//    use K = k0 + r0 + R (A must be zero beyond the diagonal up to that width).
//  * col_tri: only C's lower triangle is wanted: columns < round16(r0 + R).
struct Gemm {
  int M = 0, N = 0, k0 = 0;
  bool k_tri = false, col_tri = false;
  const float* A = nullptr;
  int64_t lda = 0;
  const float* B = nullptr;
  int64_t ldb = 0;
  float* Cm = nullptr;
  int64_t ldc = 0;
  bool load_c = false;
  float cscale = 1.0f;
};

// Column panels outer, so that a panel of B (K x 64) stays in L1 across the row blocks.
void gemm(const Gemm& g) {
  for (int c0 = 0; c0 < g.N; c0 += 16 * kNV) {
    const int nv = imin(kNV, (g.N - c0) / 16);
    for (int r0 = 0; r0 < g.M; r0 += kMR) {
      const int R = imin(kMR, g.M - r0);
      if (g.col_tri && c0 >= r0 + R) continue;  // wholly above the diagonal
      const int K = g.k0 + (g.k_tri ? r0 + R : 0);
      const int nvr = g.col_tri ? imin(nv, (round16(r0 + R) - c0) / 16) : nv;
      kMicro[R - 1][nvr - 1](K, g.A + r0 * g.lda, g.lda, g.B + c0, g.ldb, g.Cm + r0 * g.ldc + c0, g.ldc, g.load_c,
                             g.cscale);
    }
  }
}

}  // namespace
}  // namespace tandem::kernels::avx512
