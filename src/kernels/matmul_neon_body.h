// The Q4_0 / Q8_0 row kernels of the neon and dotprod tiers (matmul_neon.h), written once:
// matmul_neon.cpp includes this inside namespace neon (Armv8.0) and matmul_dotprod.cpp inside
// namespace dotprod (compiled with +dotprod, where dot16 becomes SDOT). Everything here is local
// to the including namespace, and it calls no inline library code, so no function compiled with
// +dotprod can be picked by the linker for a caller on a core without it.
//
// Not a public header: include only from those two files, after <arm_neon.h> and quants.h.

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

#include "kernels/matmul_neon_blocks.h"

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

}  // namespace detail

void rows_q4_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy) {
  detail::rows_q<BlockQ4_0>(w, stride, n, r0, r1, a, nc, y, ldy);
}
void rows_q8_0(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
               float* y, int64_t ldy) {
  detail::rows_q<BlockQ8_0>(w, stride, n, r0, r1, a, nc, y, ldy);
}
