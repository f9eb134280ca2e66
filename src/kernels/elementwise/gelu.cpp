#include "kernels/elementwise/gelu.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gguf/ggml_type.h"
#include "kernels/elementwise/elementwise_avx512.h"

namespace tandem::kernels {
namespace {

// Built on first use (thread-safe static), as floats (256 KiB: the F16 entries widened once, so
// the vector body gathers them directly).
const std::vector<float>& table() {
  static const std::vector<float> t = [] {
    std::vector<float> v(65536);
    for (uint32_t i = 0; i < 65536; ++i)
      v[i] = fp16_to_fp32(fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(i)))));
    return v;
  }();
  return t;
}

}  // namespace

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

void gelu_tanh_table_ref(const float* x, float* y, int64_t n) {
  const float* t = table().data();
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f) y[i] = 0.0f;
    else if (v >= 10.0f) y[i] = v;
    else y[i] = t[fp32_to_fp16(v)];
  }
}

void gelu_tanh_table(CpuTier tier, const float* x, float* y, int64_t n) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::gelu_table(table().data(), x, y, n);
#endif
  gelu_tanh_table_ref(x, y, n);
}

}  // namespace tandem::kernels
