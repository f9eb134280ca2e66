#include "model/hybrid_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/quants.h"
#include "kernels/attention/attention.h"
#include "kernels/norms/norms.h"
#include "kernels/rope/rope.h"

namespace tandem {

using namespace kernels;

void HybridBlocks::set_pool(ThreadPool* pool) {
  pool_ = pool;
  kc.pool = pool;
  per_thread_.reset(new ScratchBuffer[static_cast<size_t>(pool->size())]);
}

void HybridBlocks::embed(const WeightMatrix& table, std::span<const int32_t> tokens, float scale, float* x) const {
  const int64_t n = table.cols;
  for (size_t t = 0; t < tokens.size(); ++t) {
    float* row = x + static_cast<int64_t>(t) * n;
    dequantize_row(table.type, table.row(tokens[t]), row, n);
    if (scale != 1.0f)
      for (int64_t i = 0; i < n; ++i) row[i] *= scale;
  }
}

void HybridBlocks::rms_norm_rows(const float* x, const float* w, float* out, int64_t T, int64_t n, float eps) {
  auto rows = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) rms_norm(kc.tier, x + t * n, w, out + t * n, n, eps);
  };
  constexpr int64_t kRows = 16;  // tokens per task: a long batch spreads over the pool
  if (T < 2 * kRows || !pool_) return rows(0, T);
  pool_->parallel_for((T + kRows - 1) / kRows, [&](int64_t b, int) { rows(b * kRows, std::min(T, (b + 1) * kRows)); });
}

void HybridBlocks::project(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy) {
  if (column_shared || T == 1) {
    matmul(W, X, ldx, T, Y, ldy, kc);
    return;
  }
  for (int64_t t = 0; t < T; ++t) matmul(W, X + t * ldx, ldx, 1, Y + t * ldy, ldy, kc);
}

void HybridBlocks::attention(const AttentionBlock& L, const float* in, int64_t n_embd, int64_t T, int64_t pos0,
                             float* kc_rows, float* vc_rows, float* out) {
  const int hd = L.head_dim, nh = L.n_head, nkv = L.n_head_kv;
  const int64_t qdim = static_cast<int64_t>(nh) * hd, kvd = static_cast<int64_t>(nkv) * hd;
  float* q = grown(q_, static_cast<size_t>(T * qdim));
  float* k = grown(k_, static_cast<size_t>(T * kvd));
  float* v = grown(v_, static_cast<size_t>(T * kvd));
  if (column_shared || T == 1) {
    const MatmulTarget proj[] = {{L.q, q, qdim}, {L.k, k, kvd}, {L.v, v, kvd}};
    matmul_multi(proj, in, n_embd, T, kc);
  } else {
    project(*L.q, in, n_embd, T, q, qdim);
    project(*L.k, in, n_embd, T, k, kvd);
    project(*L.v, in, n_embd, T, v, kvd);
  }
  // Per-head norms, RoPE, then the new K/V rows into the cache.
  float* cs = L.rope ? grown(rope_cs_, static_cast<size_t>(hd)) : nullptr;
  for (int64_t t = 0; t < T; ++t) {
    float* qrow = q + t * qdim;
    float* krow = k + t * kvd;
    if (L.q_norm)
      for (int h = 0; h < nh; ++h) rms_norm(kc.tier, qrow + h * hd, L.q_norm, qrow + h * hd, hd, L.eps);
    if (L.k_norm)
      for (int h = 0; h < nkv; ++h) rms_norm(kc.tier, krow + h * hd, L.k_norm, krow + h * hd, hd, L.eps);
    if (L.rope) {
      rope_cache(pos0 + t, hd, L.rope_base, cs);
      rope_apply(qrow, nh, hd, hd, cs);
      rope_apply(krow, nkv, hd, hd, cs);
    }
    std::memcpy(kc_rows + (pos0 + t) * kvd, krow, static_cast<size_t>(kvd) * sizeof(float));
    std::memcpy(vc_rows + (pos0 + t) * kvd, v + t * kvd, static_cast<size_t>(kvd) * sizeof(float));
  }
  // One task per KV head and a few consecutive tokens: the group's query rows share every K/V read.
  float* o = grown(o_, static_cast<size_t>(T * qdim));
  attention_causal_tasks(kc.tier,
                         {.n_head = nh, .n_head_kv = nkv, .head_dim = hd, .T = T, .pos0 = pos0, .scale = L.scale,
                          .q = q, .ldq = qdim, .k_cache = kc_rows, .v_cache = vc_rows, .kv_stride = kvd, .out = o,
                          .ldo = qdim},
                         *pool_, per_thread_.get());
  project(*L.o, o, qdim, T, out, n_embd);
}

void HybridBlocks::swiglu_ffn(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                              const float* in, int64_t n_embd, int64_t T, float* out) {
  const int64_t n_ff = gate.rows;
  float* act = grown(act_, static_cast<size_t>(T * n_ff));
  // Gate and up fused with SwiGLU: the two products never leave a per-task tile.
  if (column_shared || T == 1) {
    matmul_swiglu(gate, up, in, n_embd, T, act, n_ff, kc);
  } else {
    for (int64_t t = 0; t < T; ++t) matmul_swiglu(gate, up, in + t * n_embd, n_embd, 1, act + t * n_ff, n_ff, kc);
  }
  project(down, act, n_ff, T, out, n_embd);
}

}  // namespace tandem
