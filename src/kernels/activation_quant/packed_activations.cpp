#include "kernels/activation_quant/packed_activations.h"

#include <cstring>

#include "gguf/quants.h"
#include "kernels/activation_quant/activation_quant.h"

namespace tandem::kernels {

size_t q8_pairs_bytes(int64_t n, PairLayout layout) {
  const int64_t np = (n / kQK + 1) / 2;
  const size_t codes = static_cast<size_t>(np) * 64;
  const size_t corr = layout == PairLayout::kQ8Pairs ? static_cast<size_t>(np) * 64 : 0;
  const size_t scale = static_cast<size_t>(np) * 64;
  return codes + corr + scale;
}

Q8PairsView pack_q8_pairs(const float* x, int64_t n, PairLayout layout, void* dst) {
  const int64_t nb = n / kQK, np = (nb + 1) / 2;
  auto* base = static_cast<uint8_t*>(dst);
  uint8_t* codes = base;
  int32_t* corr = layout == PairLayout::kQ8Pairs ? reinterpret_cast<int32_t*>(base + np * 64) : nullptr;
  float* scale = reinterpret_cast<float*>(base + np * 64 + (corr ? np * 64 : 0));
  BlockQ8_0 blk[2];
  for (int64_t p = 0; p < np; ++p) {
    for (int i = 0; i < 2; ++i) {
      const int64_t b = 2 * p + i;
      if (b < nb) quantize_activation(CpuTier::Scalar, GgmlType::Q8_0, x + b * kQK, &blk[i], kQK);
      else std::memset(&blk[i], 0, sizeof(BlockQ8_0));
    }
    uint8_t* c = codes + p * 64;
    float* s = scale + p * 16;
    const float d0 = fp16_to_fp32(blk[0].d), d1 = fp16_to_fp32(blk[1].d);
    if (layout == PairLayout::kQ8Pairs) {
      std::memcpy(c, blk[0].qs, 16);
      std::memcpy(c + 16, blk[1].qs, 16);
      std::memcpy(c + 32, blk[0].qs + 16, 16);
      std::memcpy(c + 48, blk[1].qs + 16, 16);
      int32_t* k = corr + p * 16;
      std::memset(k, 0, 64);
      int s0 = 0, s1 = 0;
      for (int j = 0; j < kQK; ++j) {
        s0 += blk[0].qs[j];
        s1 += blk[1].qs[j];
      }
      k[0] = -8 * s0;
      k[4] = -8 * s1;
      for (int l = 0; l < 16; ++l) s[l] = ((l / 4) % 2 == 0) ? d0 : d1;
    } else {
      for (int j = 0; j < kQK; ++j) {
        c[j] = static_cast<uint8_t>(blk[0].qs[j] + 128);
        c[32 + j] = static_cast<uint8_t>(blk[1].qs[j] + 128);
      }
      for (int l = 0; l < 16; ++l) s[l] = l < 8 ? d0 : d1;
    }
  }
  return {codes, corr, scale};
}

}  // namespace tandem::kernels
