#include "kernels/matmul/vec_dot.h"

#include <stdexcept>
#include <string>

#include "gguf/block_codes.h"
#include "gguf/quants.h"

namespace tandem::kernels {
namespace {

float dot_f32(int64_t n, const float* x, const float* y) {
  // Eight partial sums, like a vector register, then a pairwise reduction.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[i + l] * y[i + l];
  double sum = 0.0;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * y[i];
  for (int l = 0; l < 8; ++l) sum += acc[l];
  return static_cast<float>(sum);
}

float dot_f16(int64_t n, const uint16_t* x, const uint16_t* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i])) * fp16_to_fp32(y[i]);
  return static_cast<float>(sum);
}

float dot_bf16(int64_t n, const uint16_t* x, const uint16_t* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i])) * bf16_to_fp32(y[i]);
  return static_cast<float>(sum);
}

// Every legacy type (gguf/block_codes.h): the block's integer sum of code × activation, then
// ggml's float step: (Σ · d_w) · d_a, or for the types with a min d_w · d_a · Σ + m_w · s_a.
template <typename B, typename A>
float dot_legacy(int64_t nb, const B* x, const A* y) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int q[kQK];
    legacy_codes(x[b], q);
    int sumi = 0;
    for (int e = 0; e < kQK; ++e) sumi += q[e] * y[b].qs[e];
    if constexpr (kHasMin<B>)
      sumf += fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d) * static_cast<float>(sumi) +
              fp16_to_fp32(x[b].m) * fp16_to_fp32(y[b].s);
    else
      sumf += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d);
  }
  return sumf;
}

// Shared tail of Q4_K/Q5_K: q holds the 256 unsigned quants of the super-block.
float dot_kx_block(const uint8_t* scales, const int8_t* q, const BlockQ8_K& y, float d, float dmin) {
  int sum_scaled = 0, sum_mins = 0;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    k4_scale_min(j, scales, &sc, &m);
    int s = 0;
    for (int l = 0; l < 32; ++l) s += q[j * 32 + l] * y.qs[j * 32 + l];
    sum_scaled += sc * s;
    sum_mins += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
  }
  return d * static_cast<float>(sum_scaled) - dmin * static_cast<float>(sum_mins);
}

template <typename B>
float dot_k4(int64_t nb, const B* x, const BlockQ8_K* y) {
  float sumf = 0.0f;
  int8_t q[kQK_K];
  for (int64_t b = 0; b < nb; ++b) {
    k4_codes(x[b], q);
    sumf += dot_kx_block(x[b].scales, q, y[b], y[b].d * fp16_to_fp32(x[b].d), y[b].d * fp16_to_fp32(x[b].dmin));
  }
  return sumf;
}

float dot_q6_K(int64_t nb, const BlockQ6_K* x, const BlockQ8_K* y) {
  float sumf = 0.0f;
  int8_t q[kQK_K];
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    for (int n = 0; n < kQK_K; n += 128, ql += 64, qh += 32)
      for (int l = 0; l < 32; ++l) {
        q[n + l] = static_cast<int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
        q[n + l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
        q[n + l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        q[n + l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    int sumi = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += q[j * 16 + l] * y[b].qs[j * 16 + l];
      sumi += x[b].scales[j] * s;
    }
    sumf += fp16_to_fp32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sumf;
}

float dot_q8_K(int64_t nb, const BlockQ8_K* x, const BlockQ8_K* y) {
  float sumf = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK_K; ++j) sumi += x[b].qs[j] * y[b].qs[j];
    sumf += x[b].d * y[b].d * static_cast<float>(sumi);
  }
  return sumf;
}

}  // namespace

float vec_dot_ref(GgmlType t, int64_t n, const void* w, const void* a) {
  switch (t) {
    case GgmlType::F32: return dot_f32(n, static_cast<const float*>(w), static_cast<const float*>(a));
    case GgmlType::F16: return dot_f16(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a));
    case GgmlType::BF16: return dot_bf16(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(a));
    case GgmlType::Q4_0: return dot_legacy(n / kQK, static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(a));
    case GgmlType::Q4_1: return dot_legacy(n / kQK, static_cast<const BlockQ4_1*>(w), static_cast<const BlockQ8_1*>(a));
    case GgmlType::Q5_0: return dot_legacy(n / kQK, static_cast<const BlockQ5_0*>(w), static_cast<const BlockQ8_0*>(a));
    case GgmlType::Q5_1: return dot_legacy(n / kQK, static_cast<const BlockQ5_1*>(w), static_cast<const BlockQ8_1*>(a));
    case GgmlType::Q8_0: return dot_legacy(n / kQK, static_cast<const BlockQ8_0*>(w), static_cast<const BlockQ8_0*>(a));
    case GgmlType::Q4_K: return dot_k4(n / kQK_K, static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a));
    case GgmlType::Q5_K: return dot_k4(n / kQK_K, static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a));
    case GgmlType::Q6_K: return dot_q6_K(n / kQK_K, static_cast<const BlockQ6_K*>(w), static_cast<const BlockQ8_K*>(a));
    case GgmlType::Q8_K: return dot_q8_K(n / kQK_K, static_cast<const BlockQ8_K*>(w), static_cast<const BlockQ8_K*>(a));
    default: break;
  }
  throw std::invalid_argument(std::string("vec_dot_ref: unsupported weight type ") + ggml_type_name(t));
}

}  // namespace tandem::kernels
