#include "kernels/gemm_f32/gemm_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// Every tier against the scalar reference, on sizes around the register blocks (4 rows, 16/32
// columns) and padded strides.
TEST(GemmF32, EveryTierMatchesTheReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  struct S { int64_t M, N, K; };
  for (CpuTier t : kBuildTiers) {
    if (clamp_to_machine(t) != t) continue;
    for (const S s : {S{1, 1, 1}, S{4, 32, 16}, S{5, 33, 7}, S{3, 15, 64}, S{7, 17, 12}, S{64, 100, 64}, S{9, 64, 301}, S{13, 64, 2500}, S{7, 70, 1030}, S{2, 3, 0}}) {
      const int64_t lda = s.K + 3, ldb = s.N + 5, ldc = s.N + 2;
      std::vector<float> A(static_cast<size_t>(s.M * lda)), B(static_cast<size_t>(s.K * ldb));
      for (float& v : A) v = nd(rng);
      for (float& v : B) v = nd(rng);
      std::vector<float> want(static_cast<size_t>(s.M * ldc), -7.0f), got = want;
      gemm_f32_ref(A.data(), lda, B.data(), ldb, want.data(), ldc, s.M, s.N, s.K);
      gemm_f32(t, A.data(), lda, B.data(), ldb, got.data(), ldc, s.M, s.N, s.K);
      for (int64_t i = 0; i < s.M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t at = static_cast<size_t>(i * ldc + j);
          if (j >= s.N) {
            ASSERT_EQ(got[at], -7.0f) << "wrote past N: " << cpu_tier_name(t);
            continue;
          }
          ASSERT_NEAR(got[at], want[at], 1e-4f * std::sqrt(static_cast<float>(s.K) + 1.0f))
              << cpu_tier_name(t) << " M " << s.M << " N " << s.N << " K " << s.K << " at " << i << "," << j;
        }
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
