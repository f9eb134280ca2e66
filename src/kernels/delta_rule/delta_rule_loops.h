// The loops every body of the gated delta rule runs around its arithmetic: the scalar references
// (delta_rule.cpp) and the AVX2, NEON and AVX-512 bodies. What an instruction set changes is the
// arithmetic on one state row (or one chunk); which rows, tokens, chunks and snapshots there are,
// and where each state goes, is the same logic everywhere, written here once. The per-token row
// update itself is written once too, over an ISA's float vector (delta_rule_row): the AVX2 and
// NEON bodies are that function on their vectors, and a new instruction set's body can start as
// the same one-line instantiation.
//
// Included by translation units compiled for different instruction sets: everything here is in an
// anonymous namespace, so each unit instantiates its own copy and the linker can never hand one
// ISA's instantiation to another's caller.
#pragma once

#include <math.h>
#include <string.h>

#include <cstdint>

#include "kernels/delta_rule/delta_rule.h"

namespace tandem::kernels {
namespace {

// The per-token recurrence of value head h over the call's tokens. Row j of the head's state only
// ever meets k, q, v[j], the token's decay and beta, so an ISA supplies the update of one row:
//   row(src, dst, k, q, v_j, decay, beta) -> q·(the updated row), unscaled,
// reading the row before the token at src and writing the updated row to dst (S's row; src is
// the same row from the second token on). The first token reads the state before the batch from
// S_in when given (no copy); the state after token t goes to its snapshot (in.snapshot_to[t], or
// snapshots from snapshot_from on: the processed heads' part of each).
template <typename Row>
void recurrence_head(const DeltaRuleInput& in, int h, float* S, const float* S_in, float* snapshots,
                    int64_t snapshot_from, Row&& row) {
  const int d = in.d;
  const int kh = h % in.H_k;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const int64_t sf = in.state_floats();
  const size_t head_bytes = static_cast<size_t>(d) * d * sizeof(float);
  const float* src = S_in ? S_in : S;
  for (int64_t t = 0; t < in.T; ++t) {
    const float* q = in.q + t * in.ldqk + kh * d;
    const float* k = in.k + t * in.ldqk + kh * d;
    const float* v = in.v + t * in.ldv + h * d;
    const float decay = expf(in.g[t * in.H_v + h]);
    const float beta = in.beta[t * in.H_v + h];
    float* o = in.out + t * in.ldo + h * d;
    for (int j = 0; j < d; ++j) {
      const int64_t r = static_cast<int64_t>(j) * d;  // S[.][j] over the key index
      o[j] = row(src + r, S + r, k, q, v[j], decay, beta) * scale;
    }
    src = S;
    float* snap = in.snapshot_to ? in.snapshot_to[t]
                                 : snapshots && t >= snapshot_from ? snapshots + (t - snapshot_from) * sf : nullptr;
    if (snap) memcpy(snap + static_cast<int64_t>(h) * d * d, S, head_bytes);
  }
  // An empty batch with state_in still hands the state over.
  if (in.T == 0 && S_in) memcpy(S, S_in, head_bytes);
}

// recurrence_head for every head of the call, head-outer: a head's d x d state stays in cache for
// all its tokens.
template <typename Row>
void recurrence_heads(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from, Row&& row) {
  for (int h = in.h_begin; h < in.head_end(); ++h) {
    const int64_t off = static_cast<int64_t>(h) * in.d * in.d;
    recurrence_head(in, h, state + off, in.state_in ? in.state_in + off : nullptr, snapshots, snapshot_from, row);
  }
}

// The row update of the per-token recurrence on an instruction set's float vectors V (simd/): one
// sweep decays the row and reads k·S, a second writes the delta-rule update and reads q·S (fused
// multiply-adds, sums in another order than the reference: equal within rounding, not bit for
// bit). Two registers a step, two accumulators per sum (the FMA chains are half as long), then one
// register for a remaining V::kLanes keys; d a multiple of V::kLanes.
template <class V>
float delta_rule_row(int d, const float* row, float* dst, const float* k, const float* q, float v, float decay_s,
                     float beta) {
  constexpr int L = V::kLanes;
  const typename V::V decay = V::set1(decay_s);
  typename V::V kv0 = V::zero(), kv1 = V::zero();
  int i = 0;
  for (; i + 2 * L <= d; i += 2 * L) {
    kv0 = V::fma(V::mul(V::load(row + i), decay), V::load(k + i), kv0);
    kv1 = V::fma(V::mul(V::load(row + i + L), decay), V::load(k + i + L), kv1);
  }
  if (i < d) kv0 = V::fma(V::mul(V::load(row + i), decay), V::load(k + i), kv0);
  const typename V::V delta = V::set1(beta * (v - V::sum(V::add(kv0, kv1))));
  typename V::V qs0 = V::zero(), qs1 = V::zero();
  for (i = 0; i + 2 * L <= d; i += 2 * L) {
    const typename V::V r0 = V::fma(V::load(k + i), delta, V::mul(V::load(row + i), decay));
    const typename V::V r1 = V::fma(V::load(k + i + L), delta, V::mul(V::load(row + i + L), decay));
    V::store(dst + i, r0);
    V::store(dst + i + L, r1);
    qs0 = V::fma(r0, V::load(q + i), qs0);
    qs1 = V::fma(r1, V::load(q + i + L), qs1);
  }
  if (i < d) {
    const typename V::V r0 = V::fma(V::load(k + i), delta, V::mul(V::load(row + i), decay));
    V::store(dst + i, r0);
    qs0 = V::fma(r0, V::load(q + i), qs0);
  }
  return V::sum(V::add(qs0, qs1));
}

// The whole per-token recurrence of a call on V: what an instruction set's body of
// delta_rule_recurrent is, once it has a float vector.
template <class V>
void delta_rule_recurrent_on(const DeltaRuleInput& in, float* state, float* snapshots, int64_t snapshot_from) {
  const int d = in.d;
  recurrence_heads(in, state, snapshots, snapshot_from,
                  [d](const float* row, float* dst, const float* k, const float* q, float v, float decay, float beta) {
                    return delta_rule_row<V>(d, row, dst, k, q, v, decay, beta);
                  });
}

// The chunked algorithm's walk over the call's tokens for one head: chunks of at most
// kDeltaRuleChunk tokens, restarting at each cut so that the state at a cut exists between
// chunks. chunk(t0, n) runs tokens [t0, t0 + n); emit(c) hands over the state at cut c (cuts:
// n_cuts increasing positions in [0, T]).
template <typename Chunk, typename Emit>
void chunks_between_cuts(int64_t T, const int64_t* cuts, int n_cuts, Chunk&& chunk, Emit&& emit) {
  int next_cut = 0;
  const auto emit_cuts_at = [&](int64_t pos) {
    while (next_cut < n_cuts && cuts[next_cut] == pos) emit(next_cut++);
  };
  emit_cuts_at(0);
  int64_t t0 = 0;
  while (t0 < T) {
    int64_t end = t0 + kDeltaRuleChunk < T ? t0 + kDeltaRuleChunk : T;
    if (next_cut < n_cuts && cuts[next_cut] > t0 && cuts[next_cut] < end) end = cuts[next_cut];
    chunk(t0, static_cast<int>(end - t0));
    t0 = end;
    emit_cuts_at(t0);
  }
}

}  // namespace
}  // namespace tandem::kernels
