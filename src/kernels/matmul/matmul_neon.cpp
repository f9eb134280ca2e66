// The neon tier's row kernels (matmul_neon.h): Armv8.0 Advanced SIMD, the baseline of every
// Arm64 core, so this file takes the build's default flags. Q4_0 / Q8_0 through the body shared
// with the dotprod tier (matmul_neon_body.h: SMULL + SADALP where dotprod has SDOT); F32 and F16
// here, which every Arm tier uses (dotprod and i8mm add nothing for floats).
#include <arm_neon.h>

#include <type_traits>

#include "kernels/matmul/matmul_neon.h"

namespace tandem::kernels::neon {

constexpr int kMaxCols = kMaxRowCols;
#include "kernels/matmul/matmul_neon_body.h"
using detail::half_to_float;

namespace {

inline float32x4_t load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t load4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
inline float to_float(float v) { return v; }
inline float to_float(uint16_t h) { return half_to_float(h); }

// One column's dot product of n elements: four accumulators of four lanes (16 elements a step,
// four FMAs in flight), their sum, then the n % 4 tail one FMA at a time. The order depends on n
// only, not on how many columns share the weight row.
template <typename T>
float dot(const T* x, const T* a, int64_t n) {
  float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, load4(x + i), load4(a + i));
    s1 = vfmaq_f32(s1, load4(x + i + 4), load4(a + i + 4));
    s2 = vfmaq_f32(s2, load4(x + i + 8), load4(a + i + 8));
    s3 = vfmaq_f32(s3, load4(x + i + 12), load4(a + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, load4(x + i), load4(a + i));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
  for (; i < n; ++i) s = __builtin_fmaf(to_float(x[i]), to_float(a[i]), s);
  return s;
}

template <typename T>
void rows_float(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const T* const* a, int nc,
                float* y, int64_t ldy) {
  for (int64_t r = r0; r < r1; ++r) {
    const T* x = reinterpret_cast<const T*>(w + static_cast<size_t>(r) * stride);
    for (int c = 0; c < nc; ++c) y[c * ldy + r] = dot(x, a[c], n);
  }
}

}  // namespace

const RowKernels<const BlockQ8_0*> kRowKernels = {
    .q4_0 = detail::rows_q<BlockQ4_0>, .q8_0 = detail::rows_q<BlockQ8_0>, .q4_K = detail::rows_k4<BlockQ4_K>,
    .q5_K = detail::rows_k4<BlockQ5_K>, .q6_K = detail::rows_k6, .f32 = rows_float<float>,
    .f16 = rows_float<uint16_t>};

}  // namespace tandem::kernels::neon
