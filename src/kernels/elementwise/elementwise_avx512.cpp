// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/elementwise/elementwise_avx512.h"

#include <math.h>

#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::avx512 {

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_mul_ps(silu_ps(_mm512_loadu_ps(g + i)), _mm512_loadu_ps(u + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(silu_ps(_mm512_maskz_loadu_ps(m, g + i)), _mm512_maskz_loadu_ps(m, u + i)));
  }
}

double sum_squares(const float* x, int64_t n) {
  __m512d s = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm256_mul_ps(v, v)));
  }
  alignas(64) double p[8];
  _mm512_store_pd(p, s);
  double sum = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

void mul_silu(float* x, const float* z, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), silu_ps(_mm512_loadu_ps(z + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), silu_ps(_mm512_maskz_loadu_ps(m, z + i))));
  }
}

void mul_sigmoid(float* x, const float* z, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  auto gate = [&](__m512 v) { return _mm512_div_ps(one, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), v)))); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), gate(_mm512_loadu_ps(z + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), gate(_mm512_maskz_loadu_ps(m, z + i))));
  }
}

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
    for (int r = 0; r < stride; ++r) {
      const int left = n - 16 * r;
      const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xFFFF)
                                     : static_cast<__mmask16>(left > 0 ? (1u << left) - 1 : 0);
      v[r] = _mm512_maskz_loadu_ps(m, src + 16 * r);
    }
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

// Channel-major: 16 channels per vector, their K taps picked out of the interleaved weights
// once, the window of the K-1 previous inputs kept in registers while walking the tokens.
void conv1d_silu(const float* x, int64_t ldx, int64_t T, int64_t channels, int K, const float* w, const float* state,
                 float* y, int64_t ldy) {
  const int S = K - 1;
  constexpr int kMaxTaps = 8;
  // Token-outer over a strip of up to kGroups x 16 channels: each token's row is then read as
  // one contiguous run (the rows lie ldx floats apart, ~24 KB in a real model; going down one
  // 16-channel column token by token touched a new page per load, which the prefetchers do
  // not follow). The strip's taps and window live in small arrays that stay in L1.
  constexpr int kGroups = 16;
  if (K > kMaxTaps) return;  // the caller only dispatches here for K <= 8
  const Deinterleave wsplit(K), ssplit(S > 0 ? S : 1);
  __m512 wt[kGroups][kMaxTaps], prev[kGroups][kMaxTaps];
  __mmask16 mask[kGroups];
  for (int64_t s0 = 0; s0 < channels; s0 += 16 * kGroups) {
    const int64_t strip = channels - s0 < 16 * kGroups ? channels - s0 : 16 * kGroups;
    const int ng = static_cast<int>((strip + 15) / 16);
    for (int g = 0; g < ng; ++g) {
      const int64_t c0 = s0 + 16 * g;
      const int nc = channels - c0 < 16 ? static_cast<int>(channels - c0) : 16;
      mask[g] = static_cast<__mmask16>(nc == 16 ? 0xFFFFu : (1u << nc) - 1);
      __m512 v[kMaxTaps];
      wsplit.load(w + c0 * K, nc, v);
      for (int j = 0; j < K; ++j) wt[g][j] = wsplit.tap(v, j);
      if (S > 0) {
        ssplit.load(state + c0 * S, nc, v);
        for (int j = 0; j < S; ++j) prev[g][j] = ssplit.tap(v, j);
      }
    }
    for (int64_t t = 0; t < T; ++t)
      for (int g = 0; g < ng; ++g) {
        const int64_t c0 = s0 + 16 * g;
        const __mmask16 m = mask[g];
        const __m512 cur = _mm512_maskz_loadu_ps(m, x + t * ldx + c0);
        if (S == 0) {  // a kernel of 1: no window
          _mm512_mask_storeu_ps(y + t * ldy + c0, m, silu_ps(_mm512_mul_ps(cur, wt[g][0])));
          continue;
        }
        __m512 acc = _mm512_mul_ps(prev[g][0], wt[g][0]);
        for (int j = 1; j < S; ++j) acc = _mm512_fmadd_ps(prev[g][j], wt[g][j], acc);
        acc = _mm512_fmadd_ps(cur, wt[g][S], acc);
        _mm512_mask_storeu_ps(y + t * ldy + c0, m, silu_ps(acc));
        for (int j = 0; j + 1 < S; ++j) prev[g][j] = prev[g][j + 1];
        prev[g][S - 1] = cur;
      }
  }
}

void gelu_table(const float* table, const float* x, float* y, int64_t n) {
  const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ), r, _mm512_setzero_ps());
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GE_OQ), r, v);
    _mm512_storeu_ps(y + i, r);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f) y[i] = 0.0f;
    else if (v >= 10.0f) y[i] = v;
    else {
      const __m128i h = _mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      y[i] = table[static_cast<uint16_t>(_mm_extract_epi16(h, 0))];
    }
  }
}

void softmax_scaled(float* x, int64_t n, float scale) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + j), vs);
    _mm512_storeu_ps(x + j, v);
    vmax = _mm512_max_ps(vmax, v);
  }
  float mx = _mm512_reduce_max_ps(vmax);
  for (; j < n; ++j) {
    x[j] *= scale;
    mx = x[j] > mx ? x[j] : mx;
  }
  // Sixteen float partial sums of at most n / 16 terms each (all in (0, 1]), added in double.
  const __m512 vm = _mm512_set1_ps(mx);
  __m512 acc = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm));
    _mm512_storeu_ps(x + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  double sum = 0.0;
  for (float l : lanes) sum += static_cast<double>(l);
  for (; j < n; ++j) {
    x[j] = expf(x[j] - mx);
    sum += static_cast<double>(x[j]);
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), inv));
  const float invs = static_cast<float>(1.0 / sum);
  for (; j < n; ++j) x[j] *= invs;
}

}  // namespace tandem::kernels::avx512
