// The AVX-512 body of ssm_conv (and so of conv1d_silu, conv1d.cpp): channel-major, 16 channels per
// vector, their K taps picked out of the interleaved weights once, the window of the K-1 previous
// inputs kept in registers while walking the tokens. Compiled with the AVX-512 flags
// (CMakeLists.txt) and called only after ssm_conv.cpp's dispatch; nothing with external linkage
// but the header's.
#include "kernels/conv/ssm_conv_avx512.h"

#include <immintrin.h>

#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::avx512 {
namespace {

// Tap j of 16 channels whose taps lie interleaved (channel c's tap j at c·stride + j): the
// 16·stride floats are loaded as whole vectors and each tap is picked out with two-source
// permutes, one per pair of vectors, instead of a gather per tap (VGATHERDPS is slow on AMD
// Zen 4; by far the largest part of a decode step's conv there). The index and lane mask of
// every (tap, pair) depend on stride and tap only: set up once per call.
struct Deinterleave {
  static constexpr int kMaxStride = 8;
  int stride = 0;
  __m512i idx[kMaxStride][kMaxStride / 2];
  __mmask16 lanes[kMaxStride][kMaxStride / 2];

  explicit Deinterleave(int s) : stride(s) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int j = 0; j < s; ++j) {
      const __m512i flat = _mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(s)), _mm512_set1_epi32(j));
      for (int w = 0; 2 * w < s; ++w) {  // vectors 2w and 2w + 1 hold flat [32w, 32w + 32)
        idx[j][w] = _mm512_sub_epi32(flat, _mm512_set1_epi32(32 * w));
        lanes[j][w] = _mm512_cmpge_epi32_mask(flat, _mm512_set1_epi32(32 * w)) &
                      _mm512_cmplt_epi32_mask(flat, _mm512_set1_epi32(32 * w + 32));
      }
    }
  }
  // The 16·stride floats from src (channels past nc read as zero).
  void load(const float* src, int nc, __m512* v) const {
    const int n = nc * stride;
    for (int r = 0; r < stride; ++r) v[r] = _mm512_maskz_loadu_ps(first_lanes(n - 16 * r), src + 16 * r);
  }
  __m512 tap(const __m512* v, int j) const {
    __m512 out = _mm512_setzero_ps();
    for (int w = 0; 2 * w < stride; ++w) {
      const __m512 hi = 2 * w + 1 < stride ? v[2 * w + 1] : v[2 * w];
      out = _mm512_mask_mov_ps(out, lanes[j][w], _mm512_permutex2var_ps(v[2 * w], idx[j][w], hi));
    }
    return out;
  }
};

}  // namespace

void ssm_conv(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w, const float* bias,
              bool silu, const float* state, float* y, int64_t ldy) {
  const int S = K - 1;
  constexpr int kMaxTaps = 8;
  // Token-outer over a strip of up to kGroups x 16 channels: each token's row is then read as
  // one contiguous run (the rows lie ldx floats apart, ~24 KB in a real model; going down one
  // 16-channel column token by token touched a new page per load, which the prefetchers do
  // not follow). The strip's taps and window live in small arrays that stay in L1.
  constexpr int kGroups = 16;
  if (K > kMaxTaps || K < 1) return;
  const Deinterleave wsplit(K), ssplit(S > 0 ? S : 1);
  __m512 wt[kGroups][kMaxTaps], prev[kGroups][kMaxTaps], bv[kGroups];
  __mmask16 mask[kGroups];
  for (int64_t s0 = 0; s0 < channels; s0 += 16 * kGroups) {
    const int64_t strip = channels - s0 < 16 * kGroups ? channels - s0 : 16 * kGroups;
    const int ng = static_cast<int>((strip + 15) / 16);
    for (int g = 0; g < ng; ++g) {
      const int64_t c0 = s0 + 16 * g;
      const int nc = channels - c0 < 16 ? static_cast<int>(channels - c0) : 16;
      mask[g] = first_lanes(nc);
      __m512 v[kMaxTaps];
      wsplit.load(w + c0 * K, nc, v);
      for (int j = 0; j < K; ++j) wt[g][j] = wsplit.tap(v, j);
      if (S > 0) {
        ssplit.load(state + c0 * S, nc, v);
        for (int j = 0; j < S; ++j) prev[g][j] = ssplit.tap(v, j);
      }
      bv[g] = bias ? _mm512_maskz_loadu_ps(mask[g], bias + c0) : _mm512_setzero_ps();
    }
    for (int64_t t = 0; t < T; ++t)
      for (int g = 0; g < ng; ++g) {
        const int64_t c0 = s0 + 16 * g;
        const __mmask16 m = mask[g];
        const __m512 cur = _mm512_maskz_loadu_ps(m, x + t * ldx + c0);
        __m512 acc;
        if (S == 0) {
          acc = _mm512_mul_ps(cur, wt[g][0]);
        } else {
          acc = _mm512_mul_ps(prev[g][0], wt[g][0]);
          for (int j = 1; j < S; ++j) acc = _mm512_fmadd_ps(prev[g][j], wt[g][j], acc);
          acc = _mm512_fmadd_ps(cur, wt[g][S], acc);
          for (int j = 0; j + 1 < S; ++j) prev[g][j] = prev[g][j + 1];
          prev[g][S - 1] = cur;
        }
        if (bias) acc = _mm512_add_ps(acc, bv[g]);
        if (silu) acc = silu_ps(acc);
        _mm512_mask_storeu_ps(y + t * ldy + c0, m, acc);
      }
  }
}

}  // namespace tandem::kernels::avx512
