// The hyper-parameters every layered hybrid shares (LFM2, Granite-4.0-H: recurrent and grouped-query
// attention layers told apart by the per-layer attention.head_count_kv array, each layer followed
// by a dense SwiGLU FFN; spec hybrids.md A3, B3), read the same way from "<arch>." keys, and the
// part of their ModelShape that follows from them. Each architecture's hparams (model/lfm2,
// model/granitehybrid) derive from it and add their mixer's and their scalings' keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/layer_pattern.h"
#include "model/model_shape.h"

namespace tandem {

struct LayeredHParams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int n_layer = 0;
  int64_t n_ff = 0;
  int n_head = 0, n_head_kv = 0, head_dim = 0;  // n_head_kv: the attention layers' (all equal)
  float rms_eps = 1e-5f;
  int64_t context_length = 0;
  std::vector<bool> is_recurrent;  // per layer: a recurrent (mixer) layer

  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  int n_recurrent_layers() const;
  int n_attention_layers() const { return n_layer - n_recurrent_layers(); }

  // The keys, in two steps so that an architecture can check its own keys between them (errors
  // name the file and the key): block_count and embedding_length, then feed_forward_length,
  // the heads, the layer pattern, the head size, the norm epsilon and the context length. The
  // vocabulary (token_embd's rows) is the caller's last read.
  void read_sizes(const KeyReader& k);
  void read_layers(const GgufFile& f, const KeyReader& k);

  // The shape these numbers give, with an architecture's recurrent part: its conv and scan floats
  // per layer in a sequence, and the multiply-adds per token of one recurrent layer's weights.
  ModelShape layered_shape(const std::string& architecture, int64_t conv_floats, int64_t ssm_floats,
                           double recurrent_linear) const;
};

}  // namespace tandem
