// The i8mm tier's Q4_0 / Q8_0 kernels (matmul_neon.h): SMMLA (vmmlaq_s32) multiplies a 2×8 int8
// matrix by an 8×2 one into a 2×2 int32 block, so two weight rows × two columns share every
// instruction: per 32-weight block 4 SMMLA give the four block sums of the 2×2 pair, where dotprod
// needs 2 SDOT per row and column (8 for the same four sums). The prompt path of the Arm tiers;
// one column (decode) runs the dotprod kernel, which gives the same bits (the float step of
// matmul_neon.h, per lane here). Compiled with -march=armv8.2-a+dotprod+i8mm (CMakeLists.txt);
// called only when the hwcaps report I8MM (and ASIMDDP).
#include <arm_neon.h>

#include "kernels/matmul/matmul_neon.h"

namespace tandem::kernels::i8mm {
namespace {

constexpr int kMaxCols = kMaxRowCols;

#include "kernels/matmul/matmul_neon_blocks.h"

// Two 32-byte rows u, v (each as lo/hi halves) as the four SMMLA operands: operand k holds bytes
// 8k..8k+7 of u, then of v (a 2×8 matrix, row-major).
struct Pair {
  int8x16_t m[4];
  Pair(int8x16_t ulo, int8x16_t uhi, int8x16_t vlo, int8x16_t vhi) {
    m[0] = vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(ulo), vreinterpretq_s64_s8(vlo)));
    m[1] = vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(ulo), vreinterpretq_s64_s8(vlo)));
    m[2] = vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(uhi), vreinterpretq_s64_s8(vhi)));
    m[3] = vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(uhi), vreinterpretq_s64_s8(vhi)));
  }
};

template <typename B>
void rows_q(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const BlockQ8_0* const* a, int nc,
            float* y, int64_t ldy) {
  const int64_t nb = n / kQK;
  const int pairs = (nc + 1) / 2;
  for (int64_t r = r0; r < r1; r += 2) {
    const bool two = r + 1 < r1;  // an odd last row is paired with itself, its copy discarded
    const B* xu = reinterpret_cast<const B*>(w + static_cast<size_t>(r) * stride);
    const B* xv = two ? reinterpret_cast<const B*>(w + static_cast<size_t>(r + 1) * stride) : xu;
    // acc[p] lanes: (row r, column 2p), (r, 2p+1), (r+1, 2p), (r+1, 2p+1).
    float32x4_t acc[kMaxCols / 2];
    for (int p = 0; p < pairs; ++p) acc[p] = vdupq_n_f32(0);
    for (int64_t b = 0; b < nb; ++b) {
      int8x16_t ulo, uhi, vlo, vhi;
      float du, dv;
      load_block(xu + b, ulo, uhi, du);
      load_block(xv + b, vlo, vhi, dv);
      const Pair wp(ulo, uhi, vlo, vhi);
      const float32x4_t dw = {du, du, dv, dv};
      for (int p = 0; p < pairs; ++p) {
        const int c0 = 2 * p, c1 = c0 + 1 < nc ? c0 + 1 : c0;  // an odd last column with itself
        const BlockQ8_0 &a0 = a[c0][b], &a1 = a[c1][b];
        const Pair ap(vld1q_s8(a0.qs), vld1q_s8(a0.qs + 16), vld1q_s8(a1.qs), vld1q_s8(a1.qs + 16));
        int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), wp.m[0], ap.m[0]);
        s = vmmlaq_s32(s, wp.m[1], ap.m[1]);
        s = vmmlaq_s32(s, wp.m[2], ap.m[2]);
        s = vmmlaq_s32(s, wp.m[3], ap.m[3]);
        const float da0 = half_to_float(a0.d), da1 = half_to_float(a1.d);
        const float32x4_t da = {da0, da1, da0, da1};
        // Lane by lane the dotprod kernel's step: fma(float(sum), d_w * d_a, acc).
        acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(s), vmulq_f32(dw, da));
      }
    }
    for (int p = 0; p < pairs; ++p) {
      const int c0 = 2 * p;
      y[c0 * ldy + r] = vgetq_lane_f32(acc[p], 0);
      if (c0 + 1 < nc) y[(c0 + 1) * ldy + r] = vgetq_lane_f32(acc[p], 1);
      if (two) {
        y[c0 * ldy + r + 1] = vgetq_lane_f32(acc[p], 2);
        if (c0 + 1 < nc) y[(c0 + 1) * ldy + r + 1] = vgetq_lane_f32(acc[p], 3);
      }
    }
  }
}

}  // namespace

const RowKernels<const BlockQ8_0*> kRowKernels = {.q4_0 = rows_q<BlockQ4_0>, .q8_0 = rows_q<BlockQ8_0>};

}  // namespace tandem::kernels::i8mm
