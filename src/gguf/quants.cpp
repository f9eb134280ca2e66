// Scalar reference block formats: dequantization bit-identical with ggml / gguf-py, and
// quantization identical with ggml's quantize_row_*_ref (what llama-quantize uses without an
// importance matrix). Written from the published format definitions.
//
// Bit-exactness needs every float operation to round exactly as in ggml's C code, so multiply-add
// contraction into FMA must stay off in this file whatever -march the build uses.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "gguf/quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

#include "gguf/block_codes.h"

namespace tandem {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// ggml's nearest_int: round half to even via the 1.5·2^23 magic number (valid for |x| <= 2^22).
inline int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int32_t i;
  std::memcpy(&i, &val, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// C's float -> integer conversion (truncation) for the values ggml's code produces from finite
// input; NaN and out-of-range values (only reachable from non-finite input, UB in C) map to 0.
inline int trunc_to_int(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return static_cast<int>(v);
}
inline int round_to_int(float v) { return trunc_to_int(std::round(v)); }          // roundf
inline int rint_to_int(float v) { return trunc_to_int(std::nearbyint(v)); }      // half to even (default mode)

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }
inline uint16_t f2h(float f) { return fp32_to_fp16(f); }

void check_blocks(GgmlType t, int64_t n, const char* what) {
  const int64_t be = traits(t).block_elems;
  if (n < 0 || n % be != 0) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) + " elements is not a multiple of the " +
                                ggml_type_name(t) + " block size " + std::to_string(be));
  }
}

// The value of largest magnitude among x[0, n) (the first of equals; a NaN never wins), and that
// magnitude in *amax: the scale's anchor of the symmetric formats.
inline float max_magnitude(const float* x, int n, float* amax) {
  float max = 0.0f;
  *amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > *amax) {
      *amax = ax;
      max = x[i];
    }
  }
  return max;
}

inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  int sd, sm;
  k4_scale_min(j, q, &sd, &sm);
  *d = static_cast<uint8_t>(sd);
  *m = static_cast<uint8_t>(sm);
}

// ---------------------------------------------------------------------------------------------
// The legacy 32-element blocks: what differs between the types is where a code's bits lie, its
// offset and whether the block has a min (gguf/block_codes.h); each of the patterns below is
// written once for them.

// ---------------------------------------------------------------------------------------------
// Dequantization: dequant_blocks(blocks, floats, nb), overloaded on the row type.

// Every legacy type: code · d, plus m where the block has a min.
template <typename B>
  requires kLegacy<B>
void dequant_blocks(const B* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    [[maybe_unused]] float m = 0.0f;
    if constexpr (kHasMin<B>) m = h2f(x[i].m);
    int q[kQK];
    legacy_codes(x[i], q);
    for (int e = 0; e < kQK; ++e) {
      if constexpr (kHasMin<B>) y[i * kQK + e] = q[e] * d + m;
      else y[i * kQK + e] = q[e] * d;
    }
  }
}

// Q4_K and Q5_K: per 64 elements two sub-blocks (the low nibbles of 32 bytes, then their high
// ones), each d·scale · code − dmin·min; Q5_K adds 16 where the element's bit of qh is set (bits
// 2j and 2j + 1 of qh[l] for the pair j).
template <typename B>
  requires kK4<B>
void dequant_blocks(const B* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q = x[i].qs;
    const float d = h2f(x[i].d);
    const float min = h2f(x[i].dmin);
    int is = 0;
    uint8_t sc, m;
    [[maybe_unused]] uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < kQK_K; j += 64) {
      get_scale_min_k4(is + 0, x[i].scales, &sc, &m);
      const float d1 = d * sc;
      const float m1 = min * m;
      get_scale_min_k4(is + 1, x[i].scales, &sc, &m);
      const float d2 = d * sc;
      const float m2 = min * m;
      if constexpr (std::is_same_v<B, BlockQ5_K>) {
        const uint8_t* qh = x[i].qh;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((q[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((q[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        u1 = static_cast<uint8_t>(u1 << 2);
        u2 = static_cast<uint8_t>(u2 << 2);
      } else {
        for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      }
      q += 32;
      is += 2;
    }
  }
}

void dequant_blocks(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < kQK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequant_blocks(const BlockQ8_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    float d;
    std::memcpy(&d, &x[i].d, sizeof d);
    for (int j = 0; j < kQK_K; ++j) *y++ = d * x[i].qs[j];
  }
}

// ---------------------------------------------------------------------------------------------
// Reference quantization (ggml's quantize_row_*_ref): quant_blocks(floats, blocks, nb), overloaded
// on the row type.

// Every 4- and 5-bit legacy type, as ggml's quantize_row_*_ref: the symmetric ones (Q4_0, Q5_0)
// scale by the value of largest magnitude, d = max / −2^(bits−1), codes trunc(x / d + 2^(bits−1)
// + 0.5); the ones with a min (Q4_1, Q5_1) by the range, d = (max − min) / (2^bits − 1), codes
// trunc((x − min) / d + 0.5). The codes are clamped to 2^bits − 1 through int8 as ggml does,
// except Q5_1's (ggml clamps none of them).
template <typename B>
  requires(kLegacy<B> && !kEightBit<B>)
void quant_blocks(const float* x, B* y, int64_t nb) {
  constexpr int kBits = kFifthBit<B> ? 5 : 4;
  constexpr int kTop = (1 << kBits) - 1;
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK;
    float d, min = 0.0f;
    if constexpr (kHasMin<B>) {
      float max = -3.402823466e+38f;
      min = 3.402823466e+38f;
      for (int j = 0; j < kQK; ++j) {
        if (xb[j] < min) min = xb[j];
        if (xb[j] > max) max = xb[j];
      }
      d = (max - min) / kTop;
      y[i].m = f2h(min);
    } else {
      float amax;
      d = max_magnitude(xb, kQK, &amax) / -(1 << (kBits - 1));
    }
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = f2h(d);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) {
      const float v = kHasMin<B> ? (xb[j] - min) * id : xb[j] * id;
      const float shifted = v + (kHasMin<B> ? 0.5f : (1 << (kBits - 1)) + 0.5f);
      if constexpr (std::is_same_v<B, BlockQ5_1>) q[j] = static_cast<uint8_t>(trunc_to_int(shifted));
      else q[j] = static_cast<uint8_t>(std::min(kTop, static_cast<int>(static_cast<int8_t>(trunc_to_int(shifted)))));
    }
    if constexpr (kFifthBit<B>) {
      uint32_t qh = 0;
      for (int j = 0; j < kQK / 2; ++j) {
        y[i].qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
        qh |= ((q[j] & 0x10u) >> 4) << (j + 0);
        qh |= ((q[j + kQK / 2] & 0x10u) >> 4) << (j + kQK / 2);
      }
      std::memcpy(y[i].qh, &qh, sizeof qh);
    } else {
      for (int j = 0; j < kQK / 2; ++j) y[i].qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
    }
  }
}

inline float ggml_max(float a, float b) { return a > b ? a : b; }  // ggml's MAX macro (NaN order matters)

// Q8_0 and Q8_1 (which also stores s = d · Σ q), by either rule: ggml's reference (Cpu = false:
// amax through ggml's MAX, id = 1 / d, roundf) or ggml-cpu's x86 SIMD activation quantizer
// (Cpu = true, see quantize_row_activation in the header: amax through std::max, id = 127 / amax,
// round half to even).
template <typename B, bool Cpu>
void quant_q8(const float* x, B* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = Cpu ? std::max(amax, std::fabs(xb[j])) : ggml_max(amax, std::fabs(xb[j]));
    const float d = amax / 127.f;
    const float id = Cpu ? (amax != 0.0f ? 127.f / amax : 0.0f) : (d ? 1.0f / d : 0.0f);
    y[i].d = f2h(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(Cpu ? rint_to_int(xb[j] * id) : round_to_int(xb[j] * id));
      sum += y[i].qs[j];
    }
    if constexpr (std::is_same_v<B, BlockQ8_1>) y[i].s = f2h(sum * d);
  }
}

template <typename B>
  requires kEightBit<B>
void quant_blocks(const float* x, B* y, int64_t nb) {
  quant_q8<B, false>(x, y, nb);
}

// ggml's make_qx_quants (symmetric, used by Q6_K with rmse_type 1 and no weights).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* qw) {
  float amax;
  const float max = max_magnitude(x, n, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      const int l = nearest_int(iscale * x[i]);
      L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
    }
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  auto weight = [&](int i) -> float {
    return qw ? qw[i]
              : rmse_type == 1 ? x[i] * x[i]
              : rmse_type == 2 ? 1
              : rmse_type == 3 ? std::fabs(x[i])
                               : std::sqrt(std::fabs(x[i]));
  };
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = weight(i);
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = weight(i);
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ggml's make_qkx2_quants (asymmetric scale + min search, used by Q4_K/Q5_K).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    const float w = weights[i];
    best_error += w * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        const float w = weights[i];
        error += w * diff;
      }
      if (error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): per-32 scale/min search, then 6-bit scales/mins
// packed into 12 bytes and a final re-quantization against the stored (rounded) scales.
template <int kNmax>
void quant_k_scales_mins(const float* x, float rmin, int nstep, uint16_t* d_out, uint16_t* dmin_out,
                         uint8_t* scales_out, uint8_t* L) {
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  float weights[32];
  uint8_t Laux[32];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kQK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, kNmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK_K / 32; ++j) {
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      scales_out[j] = ls;
      scales_out[j + 4] = lm;
    } else {
      scales_out[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      scales_out[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales_out[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = f2h(max_scale / 63.f);
  *dmin_out = f2h(max_min / 63.f);
  uint8_t sc, m;
  for (int j = 0; j < kQK_K / 32; ++j) {
    get_scale_min_k4(j, scales_out, &sc, &m);
    const float d = h2f(*d_out) * sc;
    if (!d) continue;
    const float dm = h2f(*dmin_out) * m;
    for (int ii = 0; ii < 32; ++ii) {
      int l = nearest_int((x[32 * j + ii] + dm) / d);
      l = std::max(0, std::min(kNmax, l));
      L[32 * j + ii] = static_cast<uint8_t>(l);
    }
  }
}

// Q4_K and Q5_K: the scales and mins, then per 64 elements two sub-blocks' codes in the low and
// high nibbles of 32 bytes; Q5_K's fifth bits go to qh (bits 2j and 2j + 1 of qh[l] for the pair j).
template <typename B>
  requires kK4<B>
void quant_blocks(const float* x, B* y, int64_t nb) {
  constexpr bool kQ5 = std::is_same_v<B, BlockQ5_K>;
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    std::memset(y[i].scales, 0, sizeof y[i].scales);
    quant_k_scales_mins<kQ5 ? 31 : 15>(x, kQ5 ? -0.5f : -1.f, kQ5 ? 15 : 20, &y[i].d, &y[i].dmin, y[i].scales, L);
    uint8_t* q = y[i].qs;
    [[maybe_unused]] uint8_t m1 = 1, m2 = 2;
    if constexpr (kQ5) std::memset(y[i].qh, 0, kQK_K / 8);
    for (int n = 0; n < kQK_K; n += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j], l2 = L[n + j + 32];
        if constexpr (kQ5) {
          if (l1 > 15) {
            l1 -= 16;
            y[i].qh[j] |= m1;
          }
          if (l2 > 15) {
            l2 -= 16;
            y[i].qh[j] |= m2;
          }
        }
        q[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      if constexpr (kQ5) {
        m1 = static_cast<uint8_t>(m1 << 2);
        m2 = static_cast<uint8_t>(m2 << 2);
      }
      q += 32;
    }
    x += kQK_K;
  }
}

void quant_blocks(const float* x, BlockQ6_K* y, int64_t nb) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  for (int64_t i = 0; i < nb; ++i) {
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
      scales[ib] = scale;
      const float abs_scale = std::fabs(scale);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scale;
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof(BlockQ6_K));
      y[i].d = f2h(0.f);
      x += kQK_K;
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = f2h(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = h2f(y[i].d) * y[i].scales[j];
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        int l = nearest_int(x[16 * j + ii] / d);
        l = std::max(-32, std::min(31, l));
        L[16 * j + ii] = static_cast<int8_t>(l + 32);
      }
    }
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQK_K; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q1 = L[j + l + 0] & 0xF;
        const uint8_t q2 = L[j + l + 32] & 0xF;
        const uint8_t q3 = L[j + l + 64] & 0xF;
        const uint8_t q4 = L[j + l + 96] & 0xF;
        ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
      }
      ql += 64;
      qh += 32;
    }
    x += kQK_K;
  }
}

void quant_blocks(const float* x, BlockQ8_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    float amax;
    const float max = max_magnitude(x, kQK_K, &amax);
    if (!amax) {
      const float zero = 0.0f;
      std::memcpy(&y[i].d, &zero, sizeof zero);
      std::memset(y[i].qs, 0, sizeof y[i].qs);
      std::memset(y[i].bsums, 0, sizeof y[i].bsums);  // ggml leaves these unwritten; all-zero qs sum to 0
      x += kQK_K;
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      y[i].qs[j] = static_cast<int8_t>(std::min(127, v));
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    const float d = 1 / iscale;
    std::memcpy(&y[i].d, &d, sizeof d);
    x += kQK_K;
  }
}

// F32, F16 and BF16 rows as row types of their own (one element a block).
struct F16Row {};
struct BF16Row {};

void dequant_blocks(const float* x, float* y, int64_t n) { std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); }
void quant_blocks(const float* x, float* y, int64_t n) { std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float)); }

// 2 bytes an element, any alignment.
void halves_to_floats(const void* src, float* dst, int64_t n, float (*to_float)(uint16_t)) {
  const auto* s = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, s + 2 * i, 2);
    dst[i] = to_float(h);
  }
}
void floats_to_halves(const float* src, void* dst, int64_t n, uint16_t (*to_half)(float)) {
  auto* d = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = to_half(src[i]);
    std::memcpy(d + 2 * i, &h, 2);
  }
}
void dequant_blocks(const F16Row* x, float* y, int64_t n) { halves_to_floats(x, y, n, fp16_to_fp32); }
void dequant_blocks(const BF16Row* x, float* y, int64_t n) { halves_to_floats(x, y, n, bf16_to_fp32); }
void quant_blocks(const float* x, F16Row* y, int64_t n) { floats_to_halves(x, y, n, fp32_to_fp16); }
void quant_blocks(const float* x, BF16Row* y, int64_t n) { floats_to_halves(x, y, n, fp32_to_bf16); }

// Each GGML type's row type: its block struct, or float, F16Row, BF16Row.
template <GgmlType T, typename R>
struct RowTypeOf {
  static constexpr GgmlType type = T;
  using Row = R;
};
using RowTypes =
    std::tuple<RowTypeOf<GgmlType::F32, float>, RowTypeOf<GgmlType::F16, F16Row>, RowTypeOf<GgmlType::BF16, BF16Row>,
               RowTypeOf<GgmlType::Q4_0, BlockQ4_0>, RowTypeOf<GgmlType::Q4_1, BlockQ4_1>,
               RowTypeOf<GgmlType::Q5_0, BlockQ5_0>, RowTypeOf<GgmlType::Q5_1, BlockQ5_1>,
               RowTypeOf<GgmlType::Q8_0, BlockQ8_0>, RowTypeOf<GgmlType::Q8_1, BlockQ8_1>,
               RowTypeOf<GgmlType::Q4_K, BlockQ4_K>, RowTypeOf<GgmlType::Q5_K, BlockQ5_K>,
               RowTypeOf<GgmlType::Q6_K, BlockQ6_K>, RowTypeOf<GgmlType::Q8_K, BlockQ8_K>>;

template <typename F, typename... R>
bool with_row_type_of(GgmlType t, F& f, std::tuple<R...>*) {
  return ((t == R::type && (f(std::type_identity<typename R::Row>{}), true)) || ...);
}
// Calls f(std::type_identity<Row>) with the row type of t; false when t has none.
template <typename F>
bool with_row_type(GgmlType t, F&& f) {
  return with_row_type_of(t, f, static_cast<RowTypes*>(nullptr));
}

}  // namespace

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  check_blocks(t, n, "dequantize_row");
  if (n == 0) return;
  const int64_t nb = n / traits(t).block_elems;
  if (!with_row_type(t,
                     [&](auto row) { dequant_blocks(static_cast<const typename decltype(row)::type*>(src), dst, nb); }))
    throw std::invalid_argument("dequantize_row: unsupported type");
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  check_blocks(t, n, "quantize_row");
  if (n == 0) return;
  const int64_t nb = n / traits(t).block_elems;
  if (!with_row_type(t, [&](auto row) { quant_blocks(src, static_cast<typename decltype(row)::type*>(dst), nb); }))
    throw std::invalid_argument("quantize_row: unsupported type");
}

void quantize_row_activation(GgmlType vec_dot_type, const float* src, void* dst, int64_t n) {
  check_blocks(vec_dot_type, n, "quantize_row_activation");
  if (n == 0) return;
  const int64_t nb = n / traits(vec_dot_type).block_elems;
  switch (vec_dot_type) {
    case GgmlType::Q8_0: return quant_q8<BlockQ8_0, true>(src, static_cast<BlockQ8_0*>(dst), nb);
    case GgmlType::Q8_1: return quant_q8<BlockQ8_1, true>(src, static_cast<BlockQ8_1*>(dst), nb);
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
    case GgmlType::Q8_K: return quantize_row(vec_dot_type, src, dst, n);
    default:
      throw std::invalid_argument(std::string("quantize_row_activation: ") + ggml_type_name(vec_dot_type) +
                                  " is not a vec_dot_type");
  }
}

}  // namespace tandem
