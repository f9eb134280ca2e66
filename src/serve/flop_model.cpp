#include "serve/flop_model.h"

namespace tandem::serve {

FlopModel FlopModel::for_model(const Qwen35HParams& hp) {
  double linear = 0;
  const double E = static_cast<double>(hp.n_embd);
  for (int il = 0; il < hp.n_layer; ++il) {
    const double ff = il < static_cast<int>(hp.n_ff.size()) ? static_cast<double>(hp.n_ff[il]) : 0.0;
    linear += 3 * E * ff;  // gate, up, down
    if (il < static_cast<int>(hp.is_recurrent.size()) && hp.is_recurrent[il]) {
      // qkv (conv_dim), z (value_dim), beta and alpha (H_v each) in; value_dim out; delta rule d x d per head.
      linear += E * (hp.conv_dim() + hp.value_dim() + 2.0 * hp.H_v) + hp.value_dim() * E;
      linear += 4.0 * hp.H_v * hp.d_state * hp.d_state;
    } else {
      linear += E * (hp.q_proj_dim() + 2.0 * hp.kv_dim()) + static_cast<double>(hp.n_head) * hp.head_dim * E;
    }
  }
  FlopModel m;
  m.per_token = 2 * linear;
  m.per_token_pair = 4.0 * hp.n_attention_layers() * hp.n_head * hp.head_dim;  // QK^T and AV
  return m;
}

}  // namespace tandem::serve
