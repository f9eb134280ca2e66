#include "kernels/activation_quant/activation_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gguf/quants.h"
#include "runtime/cpu_features.h"

namespace tandem::kernels {
namespace {

// Every tier converts activations to Q8_K with the same bytes (the AVX-512 quantizer against the
// scalar loop): ties of magnitude between elements of opposite sign (the first one sets the
// scale's sign), products landing on .5 (round half to even), zero blocks, and blocks with a NaN
// or an infinity (a broken input must not become undefined behaviour or differ by tier).
TEST(ActivationQuant, Q8KIsTheSameOnEveryTier) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd;
  const int64_t n = 8 * kQK_K;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = nd(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 21) - 10);
    float* b = x.data();
    // Block 0: +2^20 then -2^20 as the largest magnitudes; block 1: -2^20 first. Block 2's codes
    // land on halves: its largest element is -127 (scale 1), the others are k / 2.
    b[5] = 1048576.0f, b[77] = -1048576.0f;
    b[kQK_K + 3] = -1048576.0f, b[kQK_K + 200] = 1048576.0f;
    for (int j = 0; j < kQK_K; ++j) b[2 * kQK_K + j] = 0.5f * static_cast<float>(j % 255 - 127);
    b[2 * kQK_K + 1] = -127.0f;
    std::fill(b + 3 * kQK_K, b + 4 * kQK_K, 0.0f);  // an all-zero block
    if (trial % 4 == 1) b[4 * kQK_K + 9] = std::numeric_limits<float>::quiet_NaN();
    if (trial % 4 == 2) b[5 * kQK_K + 17] = std::numeric_limits<float>::infinity();
    if (trial % 4 == 3) b[6 * kQK_K + 30] = -std::numeric_limits<float>::infinity();
    std::vector<uint8_t> ref(activation_bytes(GgmlType::Q8_K, n)), got(ref.size());
    quantize_activation(CpuTier::Scalar, GgmlType::Q8_K, x.data(), ref.data(), n);
    for (CpuTier tier : kBuildTiers) {
      if (clamp_to_machine(tier) != tier) continue;  // not on this machine
      std::memset(got.data(), 0xA5, got.size());
      quantize_activation(tier, GgmlType::Q8_K, x.data(), got.data(), n);
      ASSERT_EQ(0, std::memcmp(ref.data(), got.data(), ref.size())) << cpu_tier_name(tier) << " trial " << trial;
    }
    // The scalar result itself: block 0's scale is negative (its first largest element is +2^20),
    // block 1's positive; the all-zero block is zero.
    const auto* q = reinterpret_cast<const BlockQ8_K*>(ref.data());
    EXPECT_LT(q[0].d, 0.0f);
    EXPECT_GT(q[1].d, 0.0f);
    EXPECT_EQ(q[3].d, 0.0f);
  }
}

}  // namespace
}  // namespace tandem::kernels
