// Vector math shared by the AVX-512 translation units of every op. Include ONLY from files
// compiled with AVX-512 flags (the *_avx512.cpp, *_vnni.cpp and *_amx.cpp files): everything here
// is static inline or in an anonymous namespace, so that no AVX-512 instruction can end up in a
// symbol another unit links to.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace tandem::kernels::avx512 {

// e^x, |rel err| ~ 2 ulp (Cephes expf polynomial, exponent applied with scalef so that
// large negative x underflows to 0).
static inline __m512 exp_ps(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, fx);
}

// The first n of 16 lanes (none for n <= 0, all for n >= 16): the mask of a partial vector.
static inline __mmask16 first_lanes(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : n > 0 ? (1u << n) - 1 : 0u);
}

namespace {
// Denormals (products of long decays) flushed for the duration of a call: far below the precision
// that matters to the recurrences (delta rule, Mamba2 scan), and slow. In an anonymous namespace,
// as everything here is internal: each unit has its own.
struct FlushDenormals {
  unsigned saved;
  FlushDenormals() : saved(_mm_getcsr()) { _mm_setcsr(saved | 0x8040u); }
  ~FlushDenormals() { _mm_setcsr(saved); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;
};
}  // namespace

// c += w · (the 4 bytes at a, broadcast to every lane): VPDPBUSD with an embedded-broadcast
// memory operand. GCC 12 emits a separate VPBROADCASTD for _mm512_set1_epi32(*a); one
// instruction instead of two per product keeps the front end ahead of the vector ports (~3% on
// a 1 GiB stream at T = 1 and 4, up to 12% in cache). Needs AVX-512 VNNI.
static inline void dpbusd_bcast(__m512i& c, __m512i w, const int32_t* a) {
  asm("vpdpbusd %[a]%{1to16%}, %[w], %[c]" : [c] "+v"(c) : [w] "v"(w), [a] "m"(*a));
}

// x / (1 + e^-x)
static inline __m512 silu_ps(__m512 x) {
  const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// The 16 horizontal reductions (op: add or max) of x[0..15] in one register: lane 4q + l holds
// that of x[4l + q]. Every lane is combined in the same tree ((e ∘ e+8) ∘ (e+4 ∘ e+12) per e < 4,
// then pairs of those) whatever its slot: 45 shuffles and ops where 16 separate reductions take
// ~140, and a result never depends on which slot its vector had.
template <class Op>
static inline __m512 reduce16_transposed(const __m512* x, Op op) {
  __m512 y[8], z[4], w[2];
  for (int m = 0; m < 8; ++m)  // quarters 0,1: halves of x[2m]; 2,3: of x[2m + 1]
    y[m] = op(_mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0x44), _mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0xEE));
  for (int m = 0; m < 4; ++m)  // quarter q: four partial results of x[4m + q]
    z[m] = op(_mm512_shuffle_f32x4(y[2 * m], y[2 * m + 1], 0x88), _mm512_shuffle_f32x4(y[2 * m], y[2 * m + 1], 0xDD));
  for (int m = 0; m < 2; ++m)  // quarter q: two halves of x[8m + q], then of x[8m + 4 + q]
    w[m] = op(_mm512_shuffle_ps(z[2 * m], z[2 * m + 1], 0x88), _mm512_shuffle_ps(z[2 * m], z[2 * m + 1], 0xDD));
  return op(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

// The 8 horizontal sums of x[0..7] in one 256-bit register: lane r holds that of x[r]. Every
// sum is taken in the same tree whatever its slot (quarters (0+2, 1+3) of the vector, then
// those two, then pairs of lanes), in 24 shuffles and adds where 8 separate reductions take ~64.
static inline __m256 reduce8_add_transposed(const __m512* x) {
  __m512 y[4], z[2];
  for (int m = 0; m < 4; ++m)  // quarters 0,1: halves of x[2m]; 2,3: of x[2m + 1]
    y[m] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0x44),
                         _mm512_shuffle_f32x4(x[2 * m], x[2 * m + 1], 0xEE));
  for (int m = 0; m < 2; ++m)  // quarter q: four partial sums of x[4m + q]
    z[m] = _mm512_add_ps(_mm512_shuffle_f32x4(y[2 * m], y[2 * m + 1], 0x88),
                         _mm512_shuffle_f32x4(y[2 * m], y[2 * m + 1], 0xDD));
  // quarter q: (two halves of x[q]) then (two of x[4 + q]); then lanes 0 and 2 hold the sums.
  const __m512 w = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
  const __m512 u = _mm512_add_ps(w, _mm512_shuffle_ps(w, w, 0xB1));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 4, 8, 12, 2, 6, 10, 14);
  return _mm512_castps512_ps256(_mm512_permutexvar_ps(order, u));
}

}  // namespace tandem::kernels::avx512
