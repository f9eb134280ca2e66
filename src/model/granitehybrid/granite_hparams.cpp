#include "model/granitehybrid/granite_hparams.h"

#include <cmath>
#include <sstream>

#include "model/layer_pattern.h"

namespace tandem {

int GraniteHybridHParams::n_recurrent_layers() const {
  int n = 0;
  for (bool r : is_recurrent) n += r ? 1 : 0;
  return n;
}

GraniteHybridHParams GraniteHybridHParams::from_gguf(const GgufFile& f) {
  const KeyReader k(f, "granitehybrid");
  GraniteHybridHParams hp;
  hp.n_layer = static_cast<int>(k.positive("block_count", 4096));
  hp.n_embd = k.positive("embedding_length", 1 << 20);
  if (const auto experts = f.get_uint(k.key("expert_count")); experts && *experts > 0)
    f.fail("key '" + k.key("expert_count") + "' = " + std::to_string(*experts) +
           ": mixture-of-experts Granite-4.0-H variants (H-Tiny, H-Small) are not supported; the dense ones "
           "(H-Micro, H-1B, H-350M) are");
  hp.n_ff = k.positive("feed_forward_length", 1 << 22);
  hp.n_head = static_cast<int>(k.positive("attention.head_count", 4096));
  const LayerPattern pat = read_layer_pattern(f, k, hp.n_layer, hp.n_head);
  hp.is_recurrent = pat.is_recurrent;
  hp.n_head_kv = pat.n_head_kv;
  hp.head_dim = static_cast<int>(k.head_dim(hp.n_embd, hp.n_head));
  hp.rms_eps = k.rms_eps();
  hp.context_length = static_cast<int64_t>(f.get_uint(k.key("context_length")).value_or(0));
  // llama.cpp: an absent rope.scaling.finetuned means true (RoPE on); Granite-4.0-H files say false.
  if (f.get_bool(k.key("rope.scaling.finetuned")).value_or(true))
    f.fail("key '" + k.key("rope.scaling.finetuned") +
           "' is true or absent: granitehybrid attention with RoPE (Bamba-style files) is not supported; "
           "Granite-4.0-H files write false (no positional encoding)");
  const auto scale = [&](const char* suffix, float none) {
    const double v = f.get_float(k.key(suffix)).value_or(0.0);
    if (!std::isfinite(v) || v < 0) f.fail("key '" + k.key(suffix) + "': expected a finite value >= 0");
    return v == 0.0 ? none : static_cast<float>(v);
  };
  hp.embedding_scale = scale("embedding_scale", 1.0f);
  hp.residual_scale = scale("residual_scale", 1.0f);
  hp.logit_scale = scale("logit_scale", 1.0f);
  hp.attention_scale = scale("attention.scale", 1.0f / std::sqrt(static_cast<float>(hp.head_dim)));
  hp.d_conv = static_cast<int>(k.positive("ssm.conv_kernel", 64));
  if (hp.d_conv < 2) f.fail("key '" + k.key("ssm.conv_kernel") + "' = 1: expected a kernel width > 1");
  hp.d_inner = k.positive("ssm.inner_size", 1 << 22);
  hp.d_state = static_cast<int>(k.positive("ssm.state_size", 1 << 12));
  hp.n_ssm_head = static_cast<int>(k.positive("ssm.time_step_rank", 1 << 16));
  hp.n_group = static_cast<int>(k.positive("ssm.group_count", 1 << 12));
  if (hp.d_inner % hp.n_ssm_head != 0)
    f.fail("ssm.inner_size (" + std::to_string(hp.d_inner) + ") must be a multiple of ssm.time_step_rank (" +
           std::to_string(hp.n_ssm_head) + ", the SSM heads)");
  if (hp.n_ssm_head % hp.n_group != 0 || hp.d_inner % hp.n_group != 0)
    f.fail("ssm.group_count (" + std::to_string(hp.n_group) + ") must divide the SSM heads (" +
           std::to_string(hp.n_ssm_head) + ") and ssm.inner_size");
  hp.n_vocab = vocab_rows(f);
  return hp;
}

std::string GraniteHybridHParams::summary() const {
  std::ostringstream s;
  s << "granitehybrid: " << n_layer << " layers (" << n_recurrent_layers() << " Mamba2, " << n_attention_layers()
    << " attention), n_embd " << n_embd << ", n_ff " << n_ff << ", heads " << n_head << "/" << n_head_kv << " x "
    << head_dim << ", SSM " << n_ssm_head << " heads x " << ssm_head_dim() << ", d_state " << d_state << ", groups "
    << n_group << ", vocab " << n_vocab << ", scales emb " << embedding_scale << " res " << residual_scale << " logit "
    << logit_scale << " attn " << attention_scale;
  return s.str();
}

ModelShape GraniteHybridHParams::shape() const {
  ModelShape m;
  m.architecture = "granitehybrid";
  m.n_vocab = n_vocab;
  m.n_embd = n_embd;
  m.context_length = context_length;
  m.n_layer = n_layer;
  m.sequence.n_recurrent = n_recurrent_layers();
  m.sequence.conv_floats = static_cast<int64_t>(d_conv - 1) * conv_channels();
  m.sequence.ssm_floats = static_cast<int64_t>(d_state) * d_inner;
  m.sequence.n_attention = n_attention_layers();
  m.sequence.kv_dim = kv_dim();
  const double E = static_cast<double>(n_embd);
  double linear = 0;
  for (int il = 0; il < n_layer; ++il) {
    linear += 3 * E * static_cast<double>(n_ff);
    if (is_recurrent[il])  // in/out projections, the conv, the scan (update and read: 2 per state value)
      linear += E * in_proj_rows() + static_cast<double>(d_inner) * E + static_cast<double>(d_conv) * conv_channels() +
                2.0 * d_state * static_cast<double>(d_inner);
    else
      linear += 2 * E * static_cast<double>(n_head) * head_dim + 2 * E * static_cast<double>(kv_dim());
  }
  m.flops_per_token = 2 * linear;
  m.flops_per_token_pair = 4.0 * n_attention_layers() * n_head * head_dim;
  m.summary = summary();
  return m;
}

}  // namespace tandem
