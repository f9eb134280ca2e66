// Vector helpers shared by the NEON translation units of every op (Armv8.0 Advanced SIMD, every
// Arm64 core; the *_neon.cpp files). Everything here is in an anonymous namespace, so that no
// function compiled for a newer Arm feature (a *_dotprod.cpp or *_i8mm.cpp file including this)
// can be picked by the linker for a caller on an older core.
#pragma once

#include <arm_neon.h>

namespace tandem::kernels::neon {
namespace {

// The NEON float vector as the ops' ISA-generic bodies take one (delta_rule_loops.h,
// attention_blocks.h; simd/README.md): 4 lanes, fma(a, b, c) = a·b + c with one rounding.
struct F32x4 {
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static V zero() { return vdupq_n_f32(0); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static float sum(V v) { return vaddvq_f32(v); }
};

}  // namespace
}  // namespace tandem::kernels::neon
