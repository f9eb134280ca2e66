#include "model/layered_hparams.h"

namespace tandem {

int LayeredHParams::n_recurrent_layers() const {
  int n = 0;
  for (bool r : is_recurrent) n += r ? 1 : 0;
  return n;
}

void LayeredHParams::read_sizes(const KeyReader& k) {
  n_layer = static_cast<int>(k.positive("block_count", 4096));
  n_embd = k.positive("embedding_length", 1 << 20);
}

void LayeredHParams::read_layers(const GgufFile& f, const KeyReader& k) {
  n_ff = k.positive("feed_forward_length", 1 << 22);
  n_head = static_cast<int>(k.positive("attention.head_count", 4096));
  const LayerPattern pat = read_layer_pattern(f, k, n_layer, n_head);
  is_recurrent = pat.is_recurrent;
  n_head_kv = pat.n_head_kv;
  head_dim = static_cast<int>(k.head_dim(n_embd, n_head));
  rms_eps = k.rms_eps();
  context_length = static_cast<int64_t>(f.get_uint(k.key("context_length")).value_or(0));
}

ModelShape LayeredHParams::layered_shape(const std::string& architecture, int64_t conv_floats, int64_t ssm_floats,
                                         double recurrent_linear) const {
  const double E = static_cast<double>(n_embd);
  double linear = 0;
  for (int il = 0; il < n_layer; ++il) {
    linear += 3 * E * static_cast<double>(n_ff);  // gate, up, down
    if (is_recurrent[il])
      linear += recurrent_linear;
    else
      linear += 2 * E * static_cast<double>(n_head) * head_dim + 2 * E * static_cast<double>(kv_dim());
  }
  return ModelShape{.architecture = architecture,
                    .n_vocab = n_vocab,
                    .n_embd = n_embd,
                    .context_length = context_length,
                    .n_layer = n_layer,
                    .sequence = {.n_recurrent = n_recurrent_layers(),
                                 .conv_floats = conv_floats,
                                 .ssm_floats = ssm_floats,
                                 .n_attention = n_attention_layers(),
                                 .kv_dim = kv_dim()},
                    .flops_per_token = 2 * linear,
                    .flops_per_token_pair = 4.0 * n_attention_layers() * n_head * head_dim,  // QKᵀ and AV
                    .summary = {}};  // the architecture's own line
}

}  // namespace tandem
