// Causal softmax attention with grouped KV heads (GQA) over a KV cache.
//
// Query head h reads KV head h / (n_head / n_head_kv) (HF grouping). Token t of the
// batch sits at absolute position pos0 + t and sees cache positions 0..pos0+t.
// Scores live in a per-call row of n_ctx floats: no T×T matrix is materialised.
#pragma once

#include <cstdint>
#include <functional>

#include "runtime/cpu_tier.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace tandem::kernels {

struct AttentionInput {
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t T = 0, pos0 = 0;
  float scale = 1.0f;
  const float* q = nullptr;  // T rows (stride ldq) of n_head heads
  int64_t ldq = 0;
  const float* k_cache = nullptr;  // rows of n_head_kv heads, one per position
  const float* v_cache = nullptr;
  int64_t kv_stride = 0;  // floats per cache row
  float* out = nullptr;   // T rows (stride ldo) of n_head heads
  int64_t ldo = 0;
  int64_t q_head_stride = 0;  // floats from one query head to the next in a row (0: head_dim)
};

// Query rows that share one KV head: the heads of a GQA group, for a few consecutive tokens.
// Each K and V row of the cache is read once for all of them; every row is computed alone in
// the same order whatever rows it is grouped with (scores, softmax, the weighted V sum), so
// grouping never changes a result bit. Row r sees cache positions [0, n_kv[r]).
struct AttentionRows {
  static constexpr int kMax = 16;
  int n = 0;
  const float* q[kMax] = {};  // head_dim floats each
  float* out[kMax] = {};      // head_dim floats each
  int64_t n_kv[kMax] = {};
};
// tier: the caller's kernel tier (at most the machine's; a model's KernelContext::tier).
void attention_rows(CpuTier tier, const AttentionRows& rows, int head_dim, float scale, const float* k_cache,
                    const float* v_cache, int64_t kv_stride, ScratchBuffer& scratch);
void attention_rows_ref(const AttentionRows& rows, int head_dim, float scale, const float* k_cache,
                        const float* v_cache, int64_t kv_stride, ScratchBuffer& scratch);

// A whole batch (every token and head) as attention_rows groups; the tier decides inside.
void attention_causal(CpuTier tier, const AttentionInput& in, ScratchBuffer& scratch);
// The same batch as tasks of the pool: one task per KV head and a few consecutive tokens, its
// query rows (the group's heads for those tokens) sharing every K/V row read. per_thread: one
// scratch buffer per pool thread. after(rows), when given, runs in the task on its rows once
// they hold their outputs (qwen35's output gate).
void attention_causal_tasks(CpuTier tier, const AttentionInput& in, ThreadPool& pool, ScratchBuffer* per_thread,
                            const std::function<void(const AttentionRows&)>& after = nullptr);
// The plain scalar version every tier is tested against.
void attention_causal_ref(const AttentionInput& in, ScratchBuffer& scratch);

}  // namespace tandem::kernels
