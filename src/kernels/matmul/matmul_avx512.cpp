// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mfma -mf16c (see CMakeLists.txt). Nothing
// here has external linkage but the kRowKernels table (as matmul_avx2.cpp).
#include "kernels/matmul/matmul_avx512.h"

#include <immintrin.h>
#include <string.h>

#include <type_traits>

#include "kernels/matmul/row_loop.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tandem::kernels::avx512 {
namespace {

inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

// Weight rows stream from memory once per product. The hardware prefetchers alone left the
// row kernels at 45-55% of the machine's read bandwidth (bench/gemv_bench, 1 column): each
// kernel also asks for the bytes kPrefetchAhead ahead of the ones it is reading.
#ifndef TANDEM_PREFETCH_AHEAD
#define TANDEM_PREFETCH_AHEAD 4096
#endif
constexpr size_t kPrefetchAhead = TANDEM_PREFETCH_AHEAD;

// The lines of [p + kPrefetchAhead, + bytes), bytes a few cache lines at most.
// The same lines are also asked for twice as far ahead into L2 only, so that each is on its
// way before its L1 request (as the packed streams do, matmul_amx.cpp): 1 GiB Q4_K, 2
// threads, side by side, T = 1 49.9 -> 46.9 ms; T = 4 unchanged (arithmetic-bound).
inline void prefetch_ahead(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p) + kPrefetchAhead;
  for (size_t off = 0; off < bytes; off += 64) {
    _mm_prefetch(c + off, _MM_HINT_T0);
    _mm_prefetch(c + kPrefetchAhead + off, _MM_HINT_T1);
  }
}

// Two Q4_0 blocks b[0], b[1] (b[1] only when has1; past a row's end its codes and scale are zero)
// as one VPDPBUSD operand in the packed activations' order [b0 lo, b1 lo, b0 hi, b1 hi], and the
// lanes' weight scales. The weights are the unsigned operand; the activations' columns carry the
// Q4_0 offset term (−8 · Σ a per block, kQ8Pairs) as the sum's start.
struct Q4_0Pair {
  static constexpr int kPrefetchEvery = 2;  // pairs: 72 bytes per two
  __m512i z;
  __m512 dw;
  Q4_0Pair(const BlockQ4_0* b, bool has1) {
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs));
    const __m128i x1 = has1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)) : _mm_setzero_si128();
    const float d0 = h2f(b[0].d), d1 = has1 ? h2f(b[1].d) : 0.0f;
    const __m256i y = _mm256_set_m128i(x1, x0);
    z = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(y), _mm256_srli_epi16(y, 4), 1),
                         _mm512_set1_epi8(0x0F));
    dw = _mm512_mask_blend_ps(0xF0F0, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
  }
  static __m512i act_corr(const Q8PairsView& v, int64_t p) { return _mm512_load_si512(v.corr + 16 * p); }
  __m512i dot(__m512i act_corr, __m512i act) const { return _mm512_dpbusd_epi32(act_corr, z, act); }
};

// Two Q8_0 blocks as one VPDPBUSD operand (natural order). The activations carry +128 (kQ8PairsU:
// VNNI wants one unsigned operand), so the sum starts from −128 · Σ w per lane, exact.
struct Q8_0Pair {
  static constexpr int kPrefetchEvery = 1;  // 68 bytes per pair
  __m512i z, corr;
  __m512 dw;
  Q8_0Pair(const BlockQ8_0* b, bool has1) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    const __m256i w1 = has1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)) : _mm256_setzero_si256();
    z = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
    const __m512i sw = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), z);
    corr = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sw, 7));
    const float d0 = h2f(b[0].d), d1 = has1 ? h2f(b[1].d) : 0.0f;
    dw = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
  }
  static __m512i act_corr(const Q8PairsView&, int64_t) { return _mm512_setzero_si512(); }  // none
  __m512i dot(__m512i, __m512i act) const { return _mm512_dpbusd_epi32(corr, act, z); }
};

template <typename Block>
using PairOf = std::conditional_t<std::is_same_v<Block, BlockQ4_0>, Q4_0Pair, Q8_0Pair>;

// Q4_0 / Q8_0 against packed activation pairs: per pair of blocks one VPDPBUSD and one FMA per
// column, the lanes summed at the end.
template <int NC>
struct PairRow {
  template <typename Block>
  static void run(const Block* w, int64_t nb, const Q8PairsView* a, float* out) {
    using Pair = PairOf<Block>;
    __m512 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
    const int64_t np = (nb + 1) / 2;
    for (int64_t p = 0; p < np; ++p) {
      if (p % Pair::kPrefetchEvery == 0) prefetch_ahead(&w[2 * p], 64);
      const Pair wp(&w[2 * p], 2 * p + 1 < nb);
      for (int c = 0; c < NC; ++c) {
        const __m512i dot = wp.dot(Pair::act_corr(a[c], p), _mm512_load_si512(a[c].codes + 64 * p));
        const __m512 sc = _mm512_mul_ps(wp.dw, _mm512_load_ps(a[c].scale + 16 * p));
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), sc, acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
  }
};

// Decode GEMV (one column): four rows at a time share every activation load, which
// otherwise outnumber the weight bytes several times over.
template <typename Block>
struct PairRows4 {
  using Pair = PairOf<Block>;
  static void run(const uint8_t* w, size_t stride, int64_t nb, const Q8PairsView& a, float* out) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const int64_t np = (nb + 1) / 2;
    for (int64_t p = 0; p < np; ++p) {
      const bool has1 = 2 * p + 1 < nb;
      const __m512i corr = Pair::act_corr(a, p);
      const __m512i act = _mm512_load_si512(a.codes + 64 * p);
      const __m512 da = _mm512_load_ps(a.scale + 16 * p);
      for (int r = 0; r < 4; ++r) {
        const Block* b = reinterpret_cast<const Block*>(w + r * stride) + 2 * p;
        if (p % Pair::kPrefetchEvery == 0) prefetch_ahead(b, 64);
        const Pair wp(b, has1);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(wp.dot(corr, act)), _mm512_mul_ps(wp.dw, da), acc[r]);
      }
    }
    for (int r = 0; r < 4; ++r) out[r] = _mm512_reduce_add_ps(acc[r]);
  }
};

// K-quants: each weight byte times its activation byte with vpmaddubsw (pairs into int16: at
// most 63 * 127 * 2, no saturation), then vpdpwssd against the sub-block scales spread over
// the int16 lanes: the scaled sums accumulate in int32 with two instructions per 64
// elements and column, where dpbusd + a 32-bit multiply + an add took four. The integer
// sums are the same, so the results are too.
// Q5_K is the same block plus a fifth bit per code (qh: bit 2j of byte l belongs to element
// 64j + l, bit 2j + 1 to element 64j + 32 + l), ORed in as 16 before the products: codes up
// to 31, pairs at most 31 * 127 * 2, still no saturation.
template <int NC>
struct Q4_KRow {
  template <typename Block>
  static void run(const Block* w, int64_t nb, const BlockQ8_K* const* a, float* out) {
    constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
    __m512 acc[NC];
    __m256 acc_min[NC];
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm512_setzero_ps();
      acc_min[c] = _mm256_setzero_ps();
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; ++i) {
      const Block& b = w[i];
      prefetch_ahead(&b, sizeof(Block));
      const float d = h2f(b.d), dmin = h2f(b.dmin);
      // The 12 scale bytes to 8 six-bit scales (bytes 0-7) and 8 mins (bytes 8-15), the
      // k4_scale_min rule done on 32-bit words instead of per sub-block.
      uint32_t u[4];
      memcpy(u, b.scales, 12);
      u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
      const uint32_t aux = u[1] & 0x3f3f3f3fu;
      u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
      u[2] = aux;
      u[0] &= 0x3f3f3f3fu;
      const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
      const __m512i sm16 = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(sm));  // lanes 0-7 scales, 8-15 mins
      __m512i q[4], s[4];
      // Q5_K: the block's fifth bits, read once for its four chunks.
      [[maybe_unused]] const __m256i H = [&] {
        if constexpr (kFifthBit) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
        else return _mm256_setzero_si256();
      }();
      [[maybe_unused]] const __m256i one = _mm256_set1_epi8(1);
      for (int c4 = 0; c4 < 4; ++c4) {
        const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c4));
        q[c4] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(y, m4)),
                                   _mm256_and_si256(_mm256_srli_epi16(y, 4), m4), 1);
        if constexpr (kFifthBit) {
          const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(H, _mm_cvtsi32_si128(2 * c4)), one);
          const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(H, _mm_cvtsi32_si128(2 * c4 + 1)), one);
          q[c4] = _mm512_or_si512(q[c4], _mm512_slli_epi16(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), 4));
        }
        // int16 lanes 0-15: sub-block 2*c4 (the low nibbles), 16-31: sub-block 2*c4 + 1.
        s[c4] = _mm512_permutexvar_epi16(
            _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(static_cast<short>(2 * c4)),
                                    _mm512_set1_epi16(static_cast<short>(2 * c4 + 1))),
            sm16);
      }
      // Each min applies to the two 16-element halves of its sub-block (bsums 2j, 2j+1).
      const __m128i mn16 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
      const __m256i mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn16, mn16), _mm_unpacklo_epi16(mn16, mn16));
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_K& y = a[c][i];
        __m512i isum = _mm512_setzero_si512();
        for (int c4 = 0; c4 < 4; ++c4) {
          const __m512i prod = _mm512_maddubs_epi16(q[c4], _mm512_loadu_si512(y.qs + 64 * c4));
          isum = _mm512_dpwssd_epi32(isum, prod, s[c4]);
        }
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * y.d), acc[c]);
        const __m256i m = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)), mins);
        acc_min[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(dmin * y.d), acc_min[c]);
      }
    }
    for (int c = 0; c < NC; ++c) {
      const __m256 h = _mm256_add_ps(acc_min[c], _mm256_permute2f128_ps(acc_min[c], acc_min[c], 1));
      const __m128 l = _mm_add_ps(_mm256_castps256_ps128(h), _mm_movehl_ps(_mm256_castps256_ps128(h), _mm256_castps256_ps128(h)));
      const float mins_sum = _mm_cvtss_f32(_mm_add_ss(l, _mm_movehdup_ps(l)));
      out[c] = _mm512_reduce_add_ps(acc[c]) - mins_sum;
    }
  }
};

template <int NC>
struct Q6_KRow {
  static void run(const BlockQ6_K* w, int64_t nb, const BlockQ8_K* const* a, float* out) {
    __m512 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
    for (int64_t i = 0; i < nb; ++i) {
      const BlockQ6_K& b = w[i];
      prefetch_ahead(&b, sizeof(BlockQ6_K));
      const float d = h2f(b.d);
      __m512i q[4], s[4];
      for (int h = 0; h < 2; ++h) {
        const __m512i A = _mm512_loadu_si512(b.ql + 64 * h);
        const __m256i H = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
        const __m512i h_lo = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_castsi256_si512(H), _mm256_srli_epi16(H, 2), 1), m2);
        const __m512i h_hi = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_srli_epi16(H, 4)), _mm256_srli_epi16(H, 6), 1), m2);
        q[2 * h] = _mm512_or_si512(_mm512_and_si512(A, m4), _mm512_slli_epi16(h_lo, 4));
        q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(A, 4), m4), _mm512_slli_epi16(h_hi, 4));
      }
      // The zmm covering elements [64g, 64g+64) spans sub-blocks 4g .. 4g+3 (16 elements, 8
      // int16 lanes each): int16 lane k carries the scale of sub-block 4g + k/8.
      const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      const __m512i sc16 = _mm512_cvtepi8_epi16(_mm256_castsi128_si256(scales));  // 16 scales, lanes 0-15
      for (int g = 0; g < 4; ++g) {
        const __m512i idx = _mm512_set_epi16(4 * g + 3, 4 * g + 3, 4 * g + 3, 4 * g + 3, 4 * g + 3, 4 * g + 3, 4 * g + 3,
                                             4 * g + 3, 4 * g + 2, 4 * g + 2, 4 * g + 2, 4 * g + 2, 4 * g + 2, 4 * g + 2,
                                             4 * g + 2, 4 * g + 2, 4 * g + 1, 4 * g + 1, 4 * g + 1, 4 * g + 1, 4 * g + 1,
                                             4 * g + 1, 4 * g + 1, 4 * g + 1, 4 * g, 4 * g, 4 * g, 4 * g, 4 * g, 4 * g,
                                             4 * g, 4 * g);
        s[g] = _mm512_permutexvar_epi16(idx, sc16);
      }
      // The stored codes are q + 32: each column's sum starts from −32 · Σ_j scale_j · bsum_j
      // (in integers; −32 · scale fits int16), so the per-column work is the dot products, one
      // multiply-add for the offset and the float scaling. The scales' −32 multiple and d are
      // shared by the columns.
      const __m256i neg32sc = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(scales), _mm256_set1_epi16(-32));
      const __m512 dv = _mm512_set1_ps(d);
      for (int c = 0; c < NC; ++c) {
        const BlockQ8_K& y = a[c][i];
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums));
        __m512i isum = _mm512_zextsi256_si512(_mm256_madd_epi16(bs, neg32sc));
        for (int g = 0; g < 4; ++g) {
          const __m512i prod = _mm512_maddubs_epi16(q[g], _mm512_loadu_si512(y.qs + 64 * g));
          isum = _mm512_dpwssd_epi32(isum, prod, s[g]);
        }
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dv, _mm512_set1_ps(y.d)), acc[c]);
      }
    }
    for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
  }
};

// F32 / F16 rows on 16-float registers (FloatRow), the partial step loaded masked; the weights'
// stream prefetched ahead (a line per F32 step, per second F16 step).
struct Lanes {
  using Acc = __m512;
  static constexpr int64_t kStep = 16;
  static __m512 zero() { return _mm512_setzero_ps(); }
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m512 load_tail(const float* p, int64_t k) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << k) - 1), p);
  }
  static __m512 load_tail(const uint16_t* p, int64_t k) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << k) - 1), p));
  }
  static __m512 fma(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(__m512 v) { return _mm512_reduce_add_ps(v); }
  static void prefetch(const float* w, int64_t i) { prefetch_ahead(w + i, 64); }
  static void prefetch(const uint16_t* w, int64_t i) {
    if ((i & 31) == 0) prefetch_ahead(w + i, 64);
  }
};
template <int NC>
using FloatLanesRow = FloatRow<Lanes, NC>;

}  // namespace

const RowKernels<Q8PairsView> kRowKernels = {
    .q4_0 = rows_by_columns_gemv4<BlockQ4_0, PairRow, PairRows4<BlockQ4_0>>,
    .q8_0 = rows_by_columns_gemv4<BlockQ8_0, PairRow, PairRows4<BlockQ8_0>>, .q4_K = rows_by_columns<BlockQ4_K, Q4_KRow>,
    .q5_K = rows_by_columns<BlockQ5_K, Q4_KRow>, .q6_K = rows_by_columns<BlockQ6_K, Q6_KRow>,
    .f32 = rows_by_columns<float, FloatLanesRow>, .f16 = rows_by_columns<uint16_t, FloatLanesRow>};

}  // namespace tandem::kernels::avx512
