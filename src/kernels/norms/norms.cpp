#include "kernels/norms/norms.h"

#include <cmath>

#include "kernels/norms/norms_avx512.h"

namespace tandem::kernels {

namespace {

// Σ x², each square rounded to float and the sum kept in double, as ggml's norms do
// (sum += (ggml_float)(x*x)); squaring in double would shift the scale by an ulp now and then.
// ggml adds them in one chain: n dependent double additions, ~4 cycles each, on the calling
// thread for every row. Eight interleaved partial sums, combined in a fixed order, cut the
// chain eightfold; the double result differs from the chain's in its last bits only, which
// reach the float mean about once in 10^8 rows. The AVX-512 tiers run the same sums, the
// eight partial sums as the lanes of one register (norms_avx512.cpp): same bits.
double sum_squares(CpuTier tier, const float* x, int64_t n) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::sum_squares(x, n);
#endif
  double s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += static_cast<double>(x[i + j] * x[i + j]);
  double sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

}  // namespace

void rms_norm(CpuTier tier, const float* x, const float* w, float* y, int64_t n, float eps) {
  const double sum = sum_squares(tier, x, n);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  }
}

void l2_norm(CpuTier tier, const float* x, float* y, int64_t n, float eps) {
  const double sum = sum_squares(tier, x, n);  // float squares, double sum: as ggml's l2_norm
  const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double sum2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] - mean;
    y[i] = v;
    sum2 += static_cast<double>(v * v);
  }
  const float var = static_cast<float>(sum2 / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) y[i] *= scale;
  if (w)
    for (int64_t i = 0; i < n; ++i) y[i] *= w[i];
  if (b)
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
}

}  // namespace tandem::kernels
