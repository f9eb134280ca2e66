#include "kernels/activation_quant/activation_quant.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "gguf/quants.h"
#include "kernels/activation_quant/activation_quant_avx512.h"

namespace tandem::kernels {
namespace {

// Round half to even, as _mm256_round_ps(_MM_ROUND_NEAREST) and ggml's nearest_int do.
// Finite inputs are within [-127, 127] by construction; a NaN or infinity (a broken model
// or input) becomes 0 / the clamp instead of undefined behaviour in the conversion.
inline int round_even(float x) {
  if (!(x >= -127.0f)) return x != x ? 0 : -127;
  if (x > 127.0f) return 127;
  return static_cast<int>(std::nearbyint(x));
}

// Q8_0 and Q8_1 (which also stores s = d · Σ q), by ggml-cpu's x86 rule.
template <typename B>
void to_q8(const float* x, B* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[b].qs[j] = static_cast<int8_t>(round_even(x[j] * id));
      sum += y[b].qs[j];
    }
    y[b].d = fp32_to_fp16(d);
    if constexpr (std::is_same_v<B, BlockQ8_1>) y[b].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

// The AVX-512 tiers run avx512::quantize_q8_K, the same bytes (activation_quant_test):
// a Q4_K_M file quantizes every matrix input this way, once per token and matrix width.
void to_q8_K(CpuTier tier, const float* x, BlockQ8_K* y, int64_t nb) {
#ifdef TANDEM_ARCH_X86
  if (tier_has(tier, CpuTier::Avx512Vnni)) return avx512::quantize_q8_K(x, y, nb);
#endif
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) { amax = ax; max = x[j]; }
    }
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = round_even(iscale * x[j]);
      y[b].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[j * 16 + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

}  // namespace

size_t activation_bytes(GgmlType t, int64_t n) { return row_bytes(t, n); }

void quantize_activation(CpuTier tier, GgmlType t, const float* x, void* dst, int64_t n) {
  switch (t) {
    case GgmlType::F32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
      return;
    }
    case GgmlType::BF16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
      return;
    }
    case GgmlType::Q8_0:
      to_q8(x, static_cast<BlockQ8_0*>(dst), n / kQK);
      return;
    case GgmlType::Q8_1:
      to_q8(x, static_cast<BlockQ8_1*>(dst), n / kQK);
      return;
    case GgmlType::Q8_K:
      to_q8_K(tier, x, static_cast<BlockQ8_K*>(dst), n / kQK_K);
      return;
    default:
      throw std::invalid_argument(std::string("quantize_activation: not a vec_dot type: ") + ggml_type_name(t));
  }
}

}  // namespace tandem::kernels
