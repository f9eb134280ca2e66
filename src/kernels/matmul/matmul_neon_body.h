// The Q4_0 / Q8_0 and K-quant row kernels of the neon and dotprod tiers (matmul_neon.h), written once:
// matmul_neon.cpp includes this inside namespace neon (Armv8.0) and matmul_dotprod.cpp inside
// namespace dotprod (compiled with +dotprod, where dot16 becomes SDOT). Everything here is local
// to the including namespace, and it calls no inline library code, so no function compiled with
// +dotprod can be picked by the linker for a caller on a core without it.
//
// Not a public header: include only from those two files, after <arm_neon.h>, <type_traits> and
// quants.h.

namespace detail {

// acc += the four 4-byte dot products of a and b (lane i: bytes 4i..4i+3). Without dotprod: the
// 16 products in two SMULL halves, pairwise-added into the lanes (SADALP); the lanes then hold
// other partial sums than SDOT's, but the block sum (vaddvq_s32) is the same integer.
inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, a, b);
#else
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

#include "kernels/matmul/matmul_neon_blocks.h"

template <typename B>
void rows_q(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
            float* y, int64_t ldy) {
  const int64_t nb = n / kQK;
  for (int64_t r = r0; r < r1; ++r) {
    const B* x = reinterpret_cast<const B*>(w + static_cast<size_t>(r) * stride);
    float acc[kMaxCols] = {};
    for (int64_t b = 0; b < nb; ++b) {
      int8x16_t lo, hi;
      float dw;
      load_block(x + b, lo, hi, dw);
      for (int c = 0; c < nc; ++c) {
        const BlockQ8_0& ab = a[c][b];
        const int32x4_t s = dot16(dot16(vdupq_n_s32(0), lo, vld1q_s8(ab.qs)), hi, vld1q_s8(ab.qs + 16));
        // The float step every Arm tier shares (matmul_neon.h): one fused multiply-add per block.
        acc[c] = __builtin_fmaf(static_cast<float>(vaddvq_s32(s)), dw * half_to_float(ab.d), acc[c]);
      }
    }
    for (int c = 0; c < nc; ++c) y[c * ldy + r] = acc[c];
  }
}

// K-quants against block_q8_K (ggml's vec_dot_type for them). A weight super-block (256 codes)
// is unpacked once into 16 registers of signed codes, shared by the columns; per column the
// integer parts are exact (each 32- or 16-element sub-block's sum times its integer scale, the
// mins against the activation's 16-element sums), and the float step is the scalar reference's
// own (vec_dot.cpp, in its order, unfused: -ffp-contract=off on Arm64), so these kernels give
// vec_dot_ref's bits on every Arm tier.
struct KCodes {
  int8x16_t q[16];  // register k: elements 16k .. 16k+15
};

// Q4_K / Q5_K: sub-block j (32 codes) is the low nibbles of qs[32(j/2) ..] for even j, the high
// ones for odd j; Q5_K adds 16 where bit j of qh[l] is set (l = element within the sub-block).
template <typename B>
inline void unpack_k4(const B& b, KCodes& k) {
  constexpr bool kFifthBit = std::is_same_v<B, BlockQ5_K>;
  const uint8x16_t m4 = vdupq_n_u8(0x0F);
  for (int j = 0; j < 4; ++j) {
    for (int h = 0; h < 2; ++h) {
      const uint8x16_t v = vld1q_u8(b.qs + 32 * j + 16 * h);
      uint8x16_t lo = vandq_u8(v, m4), hi = vshrq_n_u8(v, 4);
      if constexpr (kFifthBit) {
        const uint8x16_t H = vld1q_u8(b.qh + 16 * h), sixteen = vdupq_n_u8(16);
        lo = vorrq_u8(lo, vandq_u8(vtstq_u8(H, vdupq_n_u8(static_cast<uint8_t>(1u << (2 * j)))), sixteen));
        hi = vorrq_u8(hi, vandq_u8(vtstq_u8(H, vdupq_n_u8(static_cast<uint8_t>(2u << (2 * j)))), sixteen));
      }
      k.q[4 * j + h] = vreinterpretq_s8_u8(lo);       // sub-block 2j
      k.q[4 * j + 2 + h] = vreinterpretq_s8_u8(hi);   // sub-block 2j + 1
    }
  }
}

// Q6_K: elements 128h + 32i + l from ql (low four bits) and qh (two high bits), minus 32.
inline void unpack_q6_K(const BlockQ6_K& b, KCodes& k) {
  const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);
  const int8x16_t m32 = vdupq_n_s8(32);
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 2; ++l) {  // elements l*16 .. l*16+15 of each 32-element quarter
      const uint8x16_t A0 = vld1q_u8(b.ql + 64 * h + 16 * l), A1 = vld1q_u8(b.ql + 64 * h + 32 + 16 * l);
      const uint8x16_t H = vld1q_u8(b.qh + 32 * h + 16 * l);
      const uint8x16_t c0 = vorrq_u8(vandq_u8(A0, m4), vshlq_n_u8(vandq_u8(H, m3), 4));
      const uint8x16_t c1 = vorrq_u8(vandq_u8(A1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 2), m3), 4));
      const uint8x16_t c2 = vorrq_u8(vshrq_n_u8(A0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 4), m3), 4));
      const uint8x16_t c3 = vorrq_u8(vshrq_n_u8(A1, 4), vshlq_n_u8(vshrq_n_u8(H, 6), 4));
      k.q[8 * h + 0 + l] = vsubq_s8(vreinterpretq_s8_u8(c0), m32);
      k.q[8 * h + 2 + l] = vsubq_s8(vreinterpretq_s8_u8(c1), m32);
      k.q[8 * h + 4 + l] = vsubq_s8(vreinterpretq_s8_u8(c2), m32);
      k.q[8 * h + 6 + l] = vsubq_s8(vreinterpretq_s8_u8(c3), m32);
    }
}

template <typename B>
void rows_k4(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a, int nc,
             float* y, int64_t ldy) {
  const int64_t nb = n / kQK_K;
  for (int64_t r = r0; r < r1; ++r) {
    const B* x = reinterpret_cast<const B*>(w + static_cast<size_t>(r) * stride);
    float acc[kMaxCols] = {};
    for (int64_t i = 0; i < nb; ++i) {
      KCodes k;
      unpack_k4(x[i], k);
      int sc[8], mn[8];
      for (int j = 0; j < 8; ++j) k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
      const int32x4_t mins_lo = {mn[0], mn[1], mn[2], mn[3]}, mins_hi = {mn[4], mn[5], mn[6], mn[7]};
      const float xd = half_to_float(x[i].d), xdmin = half_to_float(x[i].dmin);
      for (int c = 0; c < nc; ++c) {
        const BlockQ8_K& ab = a[c][i];
        int32x4_t isum = vdupq_n_s32(0);
        for (int j = 0; j < 8; ++j) {
          const int32x4_t s = dot16(dot16(vdupq_n_s32(0), k.q[2 * j], vld1q_s8(ab.qs + 32 * j)), k.q[2 * j + 1],
                                    vld1q_s8(ab.qs + 32 * j + 16));
          isum = vmlaq_n_s32(isum, s, sc[j]);
        }
        // Lane j of the pairwise sums: bsums[2j] + bsums[2j+1], the activation sum of sub-block j.
        const int32x4_t bs_lo = vpaddlq_s16(vld1q_s16(ab.bsums)), bs_hi = vpaddlq_s16(vld1q_s16(ab.bsums + 8));
        const int sum_scaled = vaddvq_s32(isum);
        const int sum_mins = vaddvq_s32(vmlaq_s32(vmulq_s32(bs_lo, mins_lo), bs_hi, mins_hi));
        // vec_dot_ref's step (dot_kx_block), in its order.
        const float d = ab.d * xd, dmin = ab.d * xdmin;
        acc[c] += d * static_cast<float>(sum_scaled) - dmin * static_cast<float>(sum_mins);
      }
    }
    for (int c = 0; c < nc; ++c) y[c * ldy + r] = acc[c];
  }
}

inline void rows_k6(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_K* const* a,
                    int nc, float* y, int64_t ldy) {
  const int64_t nb = n / kQK_K;
  for (int64_t r = r0; r < r1; ++r) {
    const BlockQ6_K* x = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(r) * stride);
    float acc[kMaxCols] = {};
    for (int64_t i = 0; i < nb; ++i) {
      KCodes k;
      unpack_q6_K(x[i], k);
      const float xd = half_to_float(x[i].d);
      for (int c = 0; c < nc; ++c) {
        const BlockQ8_K& ab = a[c][i];
        int32x4_t isum = vdupq_n_s32(0);
        for (int j = 0; j < 16; ++j)
          isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), k.q[j], vld1q_s8(ab.qs + 16 * j)), x[i].scales[j]);
        // vec_dot_ref's step (dot_q6_K), in its order.
        acc[c] += xd * ab.d * static_cast<float>(vaddvq_s32(isum));
      }
    }
    for (int c = 0; c < nc; ++c) y[c * ldy + r] = acc[c];
  }
}

}  // namespace detail
