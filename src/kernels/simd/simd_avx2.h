// Vector helpers shared by the AVX2 translation units of every op. Include ONLY from files compiled
// with -mavx2 -mfma (the *_avx2.cpp files): everything here is static inline or in an anonymous
// namespace, so that no AVX2 instruction can end up in a symbol another unit links to.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tandem::kernels::avx2 {

// The sum of the 8 lanes: (lo half + hi half), then pairs, then the last two.
static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 4 bytes at p in every 32-bit lane (one VPBROADCASTD from memory).
static inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

namespace {
// The AVX2 tier's float vector as the ops' ISA-generic bodies take one (delta_rule_loops.h,
// attention_blocks.h; simd/README.md): 8 lanes, fma(a, b, c) = a·b + c with one rounding.
struct F32x8 {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) { return hsum8(v); }
};
}  // namespace

}  // namespace tandem::kernels::avx2
