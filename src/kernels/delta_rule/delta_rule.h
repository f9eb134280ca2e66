// The gated delta rule of Gated DeltaNet, two algorithms with the same result:
//
//  * recurrent (per token): for each token, decay the state, write k→v with the
//    delta rule, read with q. O(T·d²) and strictly sequential: the decode path.
//  * chunked (chunk 64, the UT/WY form of spec §6.3): within a chunk everything
//    is small dense matrix algebra; only the chunk-to-chunk state hand-off is
//    sequential. The prefill (matrix) path.
//
// State layout is llama.cpp's: state[(h*d + j)*d + i] = S_h[i][j], i the key index
// and j the value index, so that each value row j is contiguous over keys.
// Value head h reads key/query head h % H_k (GGUF's tiled head order).
//
// Each has a scalar reference (*_ref, float state, double intermediates in the
// chunked one) and a faster body chosen per call from the caller's CPU tier (the
// first argument; a model's KernelContext::tier) and d (delta_rule_avx512.cpp:
// float32, AVX-512, for d a multiple of 16; delta_rule_avx2.cpp and delta_rule_neon.cpp: per
// token, d a multiple of 8).
//
// Both can hand back intermediate states so that checkpoints and speculative
// rollback states cost no extra pass:
//  * recurrent: the state after every token t >= snapshot_from;
//  * chunked: the state at given cut positions (chunks are aligned to the cuts).
#pragma once

#include <cstdint>

#include "runtime/cpu_tier.h"
#include "runtime/scratch.h"

namespace tandem::kernels {

struct DeltaRuleInput {
  int H_k = 0, H_v = 0, d = 0;
  int64_t T = 0;
  const float* q = nullptr;     // T rows, row stride ldqk, H_k heads of d (L2-normalised, not scaled)
  const float* k = nullptr;     // T rows, row stride ldqk
  int64_t ldqk = 0;
  const float* v = nullptr;     // T rows, row stride ldv, H_v heads of d
  int64_t ldv = 0;
  const float* g = nullptr;     // T rows of H_v log-decays (<= 0)
  const float* beta = nullptr;  // T rows of H_v write strengths
  float* out = nullptr;         // T rows, row stride ldo, H_v heads of d
  int64_t ldo = 0;
  int h_begin = 0, h_end = -1;  // value heads to process ([0, H_v) by default): heads are independent
  // Recurrent only: where the state after token t goes (a whole state's base; null: not
  // kept), for t < T. Overrides the snapshots/snapshot_from arguments. Lets one call keep
  // each state in its own buffer (speculative rollback slots) with every head's state in
  // cache for all T tokens, instead of one call per token.
  float* const* snapshot_to = nullptr;
  // Recurrent only: when set, the state before the batch is read from here (a whole state's
  // base) and the state after it is written to `state`, which need not hold anything yet: a
  // pass can keep its starting state (a replay log) without copying it. The final rows are
  // then written with streaming stores where aligned (nothing reads them before the next pass).
  const float* state_in = nullptr;

  int head_end() const { return h_end < 0 ? H_v : h_end; }

  int64_t state_floats() const { return static_cast<int64_t>(H_v) * d * d; }
};

// Per-token recurrence. Updates state in place (or from in.state_in). If snapshots is non-null, the state
// after each token t >= snapshot_from is copied to snapshots + (t - snapshot_from) * state_floats
// (only the processed heads' part of each snapshot is written); in.snapshot_to, when set,
// names each token's destination instead.
void delta_rule_recurrent(CpuTier tier, const DeltaRuleInput& in, float* state, float* snapshots = nullptr,
                          int64_t snapshot_from = 0);
void delta_rule_recurrent_ref(const DeltaRuleInput& in, float* state, float* snapshots = nullptr,
                              int64_t snapshot_from = 0);

// Chunked algorithm. Updates state in place. cuts: n_cuts increasing positions in
// [0, T]; the state after the first cuts[c] tokens is copied to
// cut_states + c * state_floats.
void delta_rule_chunked(CpuTier tier, const DeltaRuleInput& in, float* state, ScratchBuffer& scratch,
                        const int64_t* cuts = nullptr, int n_cuts = 0, float* cut_states = nullptr);
void delta_rule_chunked_ref(const DeltaRuleInput& in, float* state, ScratchBuffer& scratch,
                            const int64_t* cuts = nullptr, int n_cuts = 0, float* cut_states = nullptr);

constexpr int kDeltaRuleChunk = 64;

// Whether a multi-token batch should take the chunked algorithm on this tier: only where
// delta_rule_chunked has a fast body (AVX-512, d a multiple of 16). Elsewhere the chunked one is
// the float64 scalar reference, and the per-token one (AVX2 body) is far faster: 512 tokens of a
// 4B layer, Chunked/ref 1807 ms vs Recurrent/fast 62 ms on an AVX2-only EPYC.
bool delta_rule_prefers_chunked(CpuTier tier, int d);

}  // namespace tandem::kernels
