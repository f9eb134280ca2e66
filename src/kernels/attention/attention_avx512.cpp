// Compiled with AVX-512 flags (CMakeLists.txt); plain loops and intrinsics only.
#include "kernels/attention/attention_avx512.h"

#include <immintrin.h>
#include <math.h>

#include "kernels/simd/simd_avx512.h"

// GCC 12 warns about the deliberately undefined upper halves inside its own
// intrinsics (_mm512_reduce_add_ps, ...).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tandem::kernels::avx512 {

namespace {

// How many cache rows ahead the weighted-V loop prefetches.
constexpr int64_t kPrefetchRows = 8;

// A group of 4 query rows as score_rows (below) walks the positions with it.
struct ScoreGroup {
  const float* qr[4];
  int64_t seen = 0;  // the group's longest row
  __m512i nkv;       // lane 4i + j: row i's n_kv (0 for pad rows)
  __m512 vmax;
};

ScoreGroup score_group(int r0, int n, const float* const* q, const int64_t* n_kv) {
  ScoreGroup g;
  alignas(64) int32_t lane_nkv[16];
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + i < n ? r0 + i : n - 1;
    g.qr[i] = q[r];
    g.seen = n_kv[r] > g.seen ? n_kv[r] : g.seen;
    // Lane 4i + j is row i, position p0 + j: it counts while p0 + j < n_kv (none for pad rows).
    for (int j = 0; j < 4; ++j) lane_nkv[4 * i + j] = r0 + i < n ? static_cast<int32_t>(n_kv[r]) : 0;
  }
  g.nkv = _mm512_load_si512(lane_nkv);
  g.vmax = _mm512_set1_ps(-INFINITY);
  return g;
}

// Lanes 4I..4I+3 of sc where valid, to dst[0..3].
template <int I>
__attribute__((always_inline)) inline void store_row(__m512 sc, __mmask16 valid, float* dst) {
  _mm_mask_storeu_ps(dst, static_cast<__mmask8>((valid >> (4 * I)) & 0xF), _mm512_extractf32x4_ps(sc, I));
}

// One group's 16 scores at positions p0..p0+3 (see score_rows). kPrefetch: also ask for the
// K rows 4 positions on (once per block, by the block's first group).
template <bool kPrefetch>
__attribute__((always_inline)) inline void score_block(ScoreGroup& g, int r0, int n, int64_t p0, int nv,
                                                       __m512 vscale, const float* k_cache, int64_t kv_stride,
                                                       float* scores, int64_t ld) {
  const __m512i lane_pos = _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);
  const float* kp[4];
  for (int j = 0; j < 4; ++j) kp[j] = k_cache + (p0 + j < g.seen ? p0 + j : g.seen - 1) * kv_stride;
  __m512 acc[16];  // acc[4j + i]: row i, position p0 + j (the order reduce16_transposed turns row-major)
  for (int k = 0; k < 16; ++k) acc[k] = _mm512_setzero_ps();
  for (int c = 0; c < nv; ++c) {
    __m512 kv[4];
    for (int j = 0; j < 4; ++j) {
      // The next block's K rows, a line per row and chunk (rows are kv_stride apart).
      if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(kp[j] + 4 * kv_stride + 16 * c), _MM_HINT_T0);
      kv[j] = _mm512_loadu_ps(kp[j] + 16 * c);
    }
    for (int i = 0; i < 4; ++i) {
      const __m512 qv = _mm512_loadu_ps(g.qr[i] + 16 * c);
      for (int j = 0; j < 4; ++j) acc[4 * j + i] = _mm512_fmadd_ps(qv, kv[j], acc[4 * j + i]);
    }
  }
  const __m512 sums = reduce16_transposed(acc, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
  const __m512 sc = _mm512_mul_ps(sums, vscale);  // lane 4i + j: row i, position p0 + j
  const __mmask16 valid =
      _mm512_cmplt_epi32_mask(_mm512_add_epi32(lane_pos, _mm512_set1_epi32(static_cast<int32_t>(p0))), g.nkv);
  g.vmax = _mm512_mask_max_ps(g.vmax, valid, g.vmax, sc);
  // Row i's seen positions are a prefix of its 4 lanes: a masked 128-bit store each (the
  // memory form of VCOMPRESSPS is microcoded on AMD Zen 4, ~40% of this function's time there).
  const int rows = n - r0 < 4 ? n - r0 : 4;
  store_row<0>(sc, valid, scores + r0 * ld + p0);
  if (rows > 1) store_row<1>(sc, valid, scores + (r0 + 1) * ld + p0);
  if (rows > 2) store_row<2>(sc, valid, scores + (r0 + 2) * ld + p0);
  if (rows > 3) store_row<3>(sc, valid, scores + (r0 + 3) * ld + p0);
}

// Scores of every row, 4 query rows × 4 positions at a time: the 16 dot products are
// independent chains interleaved in one loop, and each 16-float chunk of a K row is loaded once
// for the 4 rows (a row at a time would wait on one 16-deep FMA chain per score, and read K once
// per row). Positions are the outer loop and the groups of 4 rows the inner one, so a block's 4
// K rows (4 KB at head 256) are fetched once and stay in L1 for the other groups (a 1+3 pass has
// four). Each score is the same chain over the chunks and the same sum tree whatever block or
// slot it falls in, so a row's scores do not depend on its neighbours. Rows past the last group
// repeat its last row and positions past a group's longest row repeat its last position (their
// results are dropped); positions a row does not see are neither stored nor in its max.
void score_rows(int n, const float* const* q, const int64_t* n_kv, int nv, float scale, const float* k_cache,
                int64_t kv_stride, float* scores, int64_t ld, float* mx) {
  constexpr int kMaxGroups = 4;  // attention_rows takes at most 16 rows
  ScoreGroup groups[kMaxGroups];
  const int ng = (n + 3) / 4;
  int64_t longest = 0;
  for (int gi = 0; gi < ng; ++gi) {
    groups[gi] = score_group(4 * gi, n, q, n_kv);
    longest = groups[gi].seen > longest ? groups[gi].seen : longest;
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t p0 = 0; p0 < longest; p0 += 4) {
    bool first = true;
    for (int gi = 0; gi < ng; ++gi) {
      if (p0 >= groups[gi].seen) continue;
      if (first) score_block<true>(groups[gi], 4 * gi, n, p0, nv, vscale, k_cache, kv_stride, scores, ld);
      else score_block<false>(groups[gi], 4 * gi, n, p0, nv, vscale, k_cache, kv_stride, scores, ld);
      first = false;
    }
  }
  for (int gi = 0; gi < ng; ++gi) {
    alignas(64) float m[16];
    _mm512_store_ps(m, groups[gi].vmax);
    for (int i = 0; i < 4 && 4 * gi + i < n; ++i) {
      const float a = m[4 * i] > m[4 * i + 1] ? m[4 * i] : m[4 * i + 1];
      const float b = m[4 * i + 2] > m[4 * i + 3] ? m[4 * i + 2] : m[4 * i + 3];
      mx[4 * gi + i] = a > b ? a : b;
    }
  }
}

// Out rows [r0, r0 + RB) ∩ [0, n), value dims [c0, c0 + 16·CW): Σ_p w[r][p] · V[p] with the
// RB · CW accumulators in registers, each V chunk loaded once for the RB rows; w rows hold
// the normalised weights (zero past a row's n_kv). Rows past the group repeat its last row.
template <int RB, int CW>
void pv_rows(int r0, int n, const float* w, int64_t ldw, int64_t n_pos, const float* v_cache, int64_t kv_stride,
             int c0, float* const* out) {
  const float* wr[RB];
  for (int i = 0; i < RB; ++i) wr[i] = w + (r0 + i < n ? r0 + i : n - 1) * ldw;
  __m512 acc[RB][CW];
  for (int i = 0; i < RB; ++i)
    for (int c = 0; c < CW; ++c) acc[i][c] = _mm512_setzero_ps();
  for (int64_t p = 0; p < n_pos; ++p) {
    const float* v = v_cache + p * kv_stride + c0;
    // Cache rows are kv_stride apart (all KV heads): too far for the hardware to see a stream.
    if (p + kPrefetchRows < n_pos)
      for (int c = 0; c < CW; ++c) _mm_prefetch(reinterpret_cast<const char*>(v + kPrefetchRows * kv_stride + 16 * c), _MM_HINT_T0);
    __m512 vv[CW];
    for (int c = 0; c < CW; ++c) vv[c] = _mm512_loadu_ps(v + 16 * c);
    for (int i = 0; i < RB; ++i) {
      const __m512 wp = _mm512_set1_ps(wr[i][p]);
      for (int c = 0; c < CW; ++c) acc[i][c] = _mm512_fmadd_ps(wp, vv[c], acc[i][c]);
    }
  }
  for (int i = 0; i < RB && r0 + i < n; ++i)
    for (int c = 0; c < CW; ++c) _mm512_storeu_ps(out[r0 + i] + c0 + 16 * c, acc[i][c]);
}

// Every row block (RB rows) × every value block (16·CW dims, a narrower one at the end).
template <int RB, int CW>
void pv_all(int n, const float* w, int64_t ldw, const int64_t* n_kv, int nv, const float* v_cache,
            int64_t kv_stride, float* const* out) {
  for (int r0 = 0; r0 < n; r0 += RB) {
    int64_t n_pos = 0;
    for (int r = r0; r < r0 + RB && r < n; ++r) n_pos = n_kv[r] > n_pos ? n_kv[r] : n_pos;
    int c = 0;
    for (; c + CW <= nv; c += CW) pv_rows<RB, CW>(r0, n, w, ldw, n_pos, v_cache, kv_stride, 16 * c, out);
    for (; c < nv; ++c) pv_rows<RB, 1>(r0, n, w, ldw, n_pos, v_cache, kv_stride, 16 * c, out);
  }
}

}  // namespace

void attention_rows(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                    const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores) {
  const int nv = hd / 16;
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) longest = n_kv[r] > longest ? n_kv[r] : longest;
  const int64_t ld = longest;
  // 1. Scores.
  float mx[16];
  for (int r = 0; r < n; ++r) mx[r] = -INFINITY;
  score_rows(n, q, n_kv, nv, scale, k_cache, kv_stride, scores, ld, mx);
  // 2. Softmax per row; weights past n_kv are zero.
  for (int r = 0; r < n; ++r) {
    float* sr = scores + r * ld;
    const int64_t m = n_kv[r];
    double sum = 0.0;
    const __m512 vmx = _mm512_set1_ps(mx[r]);
    int64_t p = 0;
    for (; p + 16 <= m; p += 16) {
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(sr + p), vmx));
      _mm512_storeu_ps(sr + p, e);
      sum += _mm512_reduce_add_ps(e);
    }
    for (; p < m; ++p) {
      sr[p] = expf(sr[p] - mx[r]);
      sum += sr[p];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (p = 0; p < m; ++p) sr[p] = sr[p] * inv;
    for (; p < longest; ++p) sr[p] = 0.0f;
  }
  // 3. Weighted V sums. Adding a zero weight leaves a sum as it is (w · v = ±0), so a row's
  //    result does not depend on the rows it is grouped with.
  pv_all<4, 4>(n, scores, ld, n_kv, nv, v_cache, kv_stride, out);
}

}  // namespace tandem::kernels::avx512
