// Vector helpers shared by the AVX2 translation units. Include ONLY from files compiled with
// -mavx2 -mfma (matmul_packed_avx2.cpp, delta_rule_avx2.cpp, attention_avx2.cpp): everything here
// is static inline so that no AVX2 instruction can end up in a symbol another unit links to.
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

}  // namespace tandem::kernels::avx2
