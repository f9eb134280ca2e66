// attention_rows on an instruction set's float vectors V (simd/), written once: the AVX2 and NEON
// bodies (attention_avx2.cpp, attention_neon.cpp) are this function on their vectors, and a new
// instruction set's body can start as the same one-line instantiation. Rows go in blocks of four:
// their scores at every position one of them sees (each K row read once for the block), the
// softmax of each row as the reference computes it (attention_softmax.h), then the weighted V sums
// (each V chunk read once for the block), 16 value dimensions at a time (head_dim a multiple of
// 16). A row's arithmetic does not depend on the rows it is blocked with.
//
// Included by translation units compiled for different instruction sets: everything here is in an
// anonymous namespace, so each unit instantiates its own copy and the linker can never hand one
// ISA's instantiation to another's caller.
#pragma once

#include <cstdint>

#include "kernels/attention/attention_softmax.h"

namespace tandem::kernels {
namespace {

constexpr int kAttentionRowBlock = 4;

// 16 floats as 16 / V::kLanes registers: a dot product's partial sums per lane, or a slice of an
// output row.
template <class V>
struct Lanes16 {
  static constexpr int kRegs = 16 / V::kLanes;
  typename V::V r[kRegs];
  static Lanes16 zero() {
    Lanes16 x;
    for (int l = 0; l < kRegs; ++l) x.r[l] = V::zero();
    return x;
  }
  // The lanes' total: the registers added pairwise ((0 + 1) + (2 + 3)), then across the lanes.
  float sum() const {
    typename V::V s[kRegs];
    for (int l = 0; l < kRegs; ++l) s[l] = r[l];
    for (int n = kRegs; n > 1; n /= 2)
      for (int l = 0; l < n / 2; ++l) s[l] = V::add(s[2 * l], s[2 * l + 1]);
    return V::sum(s[0]);
  }
};

// Scores of rows [r0, r0 + nr) (nr <= 4) at every position one of them sees; a row's score at
// p is stored only where p < its n_kv.
template <class V>
void score_block(int r0, int nr, const float* const* q, const int64_t* n_kv, int hd, float scale, const float* k_cache,
                 int64_t kv_stride, float* scores, int64_t ld) {
  constexpr int L = V::kLanes, R = Lanes16<V>::kRegs;
  int64_t seen = 0;
  for (int r = r0; r < r0 + nr; ++r) seen = n_kv[r] > seen ? n_kv[r] : seen;
  for (int64_t p = 0; p < seen; ++p) {
    const float* k = k_cache + p * kv_stride;
    Lanes16<V> acc[kAttentionRowBlock];
    for (int i = 0; i < kAttentionRowBlock; ++i) acc[i] = Lanes16<V>::zero();
    for (int c = 0; c < hd; c += 16) {
      typename V::V kc[R];
      for (int l = 0; l < R; ++l) kc[l] = V::load(k + c + l * L);
      for (int i = 0; i < nr; ++i)
        for (int l = 0; l < R; ++l) acc[i].r[l] = V::fma(V::load(q[r0 + i] + c + l * L), kc[l], acc[i].r[l]);
    }
    for (int i = 0; i < nr; ++i)
      if (p < n_kv[r0 + i]) scores[(r0 + i) * ld + p] = acc[i].sum() * scale;
  }
}

// Out rows [r0, r0 + nr), value dims [c0, c0 + 16): Σ_p w[r][p] · V[p] position by position,
// the V chunk loaded once for the block; weights past a row's n_kv are zero (w · v = ±0 adds
// nothing).
template <class V>
void pv_block(int r0, int nr, const float* w, int64_t ldw, int64_t n_pos, const float* v_cache, int64_t kv_stride,
              int c0, float* const* out) {
  constexpr int L = V::kLanes, R = Lanes16<V>::kRegs;
  Lanes16<V> acc[kAttentionRowBlock];
  for (int i = 0; i < kAttentionRowBlock; ++i) acc[i] = Lanes16<V>::zero();
  for (int64_t p = 0; p < n_pos; ++p) {
    typename V::V vc[R];
    for (int l = 0; l < R; ++l) vc[l] = V::load(v_cache + p * kv_stride + c0 + l * L);
    for (int i = 0; i < nr; ++i) {
      const typename V::V wp = V::set1(w[(r0 + i) * ldw + p]);
      for (int l = 0; l < R; ++l) acc[i].r[l] = V::fma(wp, vc[l], acc[i].r[l]);
    }
  }
  for (int i = 0; i < nr; ++i)
    for (int l = 0; l < R; ++l) V::store(out[r0 + i] + c0 + l * L, acc[i].r[l]);
}

// attention_rows' body (attention.h: n rows, row r sees cache positions [0, n_kv[r])); scores:
// n × max(n_kv) floats.
template <class V>
void attention_rows_on(int n, const float* const* q, float* const* out, const int64_t* n_kv, int hd, float scale,
                       const float* k_cache, const float* v_cache, int64_t kv_stride, float* scores) {
  int64_t longest = 0;
  for (int r = 0; r < n; ++r) longest = n_kv[r] > longest ? n_kv[r] : longest;
  const int64_t ld = longest;
  for (int r0 = 0; r0 < n; r0 += kAttentionRowBlock) {
    const int nr = n - r0 < kAttentionRowBlock ? n - r0 : kAttentionRowBlock;
    score_block<V>(r0, nr, q, n_kv, hd, scale, k_cache, kv_stride, scores, ld);
    // Softmax per row, as attention_causal_ref; weights past n_kv are zero.
    int64_t n_pos = 0;
    for (int r = r0; r < r0 + nr; ++r) {
      n_pos = n_kv[r] > n_pos ? n_kv[r] : n_pos;
      softmax_scores_row(scores + r * ld, n_kv[r], longest);
    }
    for (int c0 = 0; c0 < hd; c0 += 16) pv_block<V>(r0, nr, scores, ld, n_pos, v_cache, kv_stride, c0, out);
  }
}

}  // namespace
}  // namespace tandem::kernels
