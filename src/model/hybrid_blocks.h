// The blocks LFM2 and Granite-4.0-H share (and most llama.cpp architectures do): the token
// embedding, RMSNorm over rows, grouped-query attention over a sequence's KV cache (optional
// per-head q/k norms, optional NEOX RoPE), the SwiGLU FFN and the projections — on one kernel
// context and thread pool. Each architecture's model (model/lfm2, model/granitehybrid) owns one
// HybridBlocks as its pass workspace and writes its forward pass with them, so that its file holds
// what is its own: the recurrent mixer and the order of the scalings.
//
// Buffers grow to the largest pass seen and are then reused: no allocation per token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/matmul/matmul.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace tandem {

using kernels::WeightMatrix;

template <typename T>
T* grown(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// One attention layer's weights and settings.
struct AttentionBlock {
  const WeightMatrix* q = nullptr;
  const WeightMatrix* k = nullptr;
  const WeightMatrix* v = nullptr;
  const WeightMatrix* o = nullptr;
  const float* q_norm = nullptr;  // head_dim weights, or null: no per-head norm
  const float* k_norm = nullptr;
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 1.0f;      // on QKᵀ
  float eps = 1e-5f;       // of the q/k norms
  bool rope = false;       // NEOX RoPE over the whole head (positions = cache indices)
  float rope_base = 10000.0f;
};

class HybridBlocks {
 public:
  explicit HybridBlocks(CpuTier tier) : kc(tier) {}
  void set_pool(ThreadPool* pool);

  kernels::KernelContext kc;  // the model's tier, matmul threads and converted activations
  // ForwardOptions::column_shared of the running pass: false multiplies column by column.
  bool column_shared = true;

  // x[t] = scale · table[tokens[t]] (scale 1: the rows as stored).
  void embed(const WeightMatrix& table, std::span<const int32_t> tokens, float scale, float* x) const;
  // out[t] = rms_norm(x[t]) ⊙ w over rows of n, t < T (out may alias x).
  void rms_norm_rows(const float* x, const float* w, float* out, int64_t T, int64_t n, float eps);
  // y = W·x for T rows (honours column_shared).
  void project(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy);
  // out = attention over cache rows [0, pos0 + T) of the T input rows `in` (n_embd wide), whose
  // K/V rows are appended at pos0 (after norms and RoPE). out: T rows of n_embd.
  void attention(const AttentionBlock& L, const float* in, int64_t n_embd, int64_t T, int64_t pos0, float* k_cache,
                 float* v_cache, float* out);
  // out = down · (silu(gate · in) ⊙ up · in), T rows of n_embd.
  void swiglu_ffn(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, const float* in,
                  int64_t n_embd, int64_t T, float* out);

 private:
  ThreadPool* pool_ = nullptr;
  std::unique_ptr<ScratchBuffer[]> per_thread_;
  std::vector<float> q_, k_, v_, o_, act_, rope_cs_;
};

}  // namespace tandem
