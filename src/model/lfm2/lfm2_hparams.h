// Hyper-parameters of an lfm2 model (LiquidAI LFM2), read from the GGUF keys (spec hybrids.md A3):
// gated short-convolution layers and grouped-query attention layers, told apart by the per-layer
// attention.head_count_kv array (0 = a conv layer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/model_shape.h"

namespace tandem {

struct Lfm2HParams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int n_layer = 0;
  int64_t n_ff = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0;  // n_head_kv: the attention layers' (all equal)
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  int64_t context_length = 0;
  int l_cache = 3;                  // shortconv.l_cache: the conv's kernel width
  std::vector<bool> is_recurrent;   // per layer: a short-conv layer

  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  int n_recurrent_layers() const;
  int n_attention_layers() const { return n_layer - n_recurrent_layers(); }

  // Reads and validates; throws GgufError naming the key and what was expected, and refuses the
  // variants this model does not compute (sliding-window attention, non-causal attention).
  static Lfm2HParams from_gguf(const GgufFile& f);
  std::string summary() const;
  ModelShape shape() const;
};

}  // namespace tandem
