#include "model/granitehybrid/granite_hparams.h"

#include <cmath>
#include <sstream>

namespace tandem {

GraniteHybridHParams GraniteHybridHParams::from_gguf(const GgufFile& f) {
  const KeyReader k(f, "granitehybrid");
  GraniteHybridHParams hp;
  hp.read_sizes(k);
  if (const auto experts = f.get_uint(k.key("expert_count")); experts && *experts > 0)
    f.fail("key '" + k.key("expert_count") + "' = " + std::to_string(*experts) +
           ": mixture-of-experts Granite-4.0-H variants (H-Tiny, H-Small) are not supported; the dense ones "
           "(H-Micro, H-1B, H-350M) are");
  hp.read_layers(f, k);
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
  const double E = static_cast<double>(n_embd);
  // A Mamba2 layer: the in/out projections, the conv, the scan (update and read: 2 per state value).
  ModelShape m = layered_shape("granitehybrid", static_cast<int64_t>(d_conv - 1) * conv_channels(),
                               static_cast<int64_t>(d_state) * d_inner,
                               E * in_proj_rows() + static_cast<double>(d_inner) * E +
                                   static_cast<double>(d_conv) * conv_channels() +
                                   2.0 * d_state * static_cast<double>(d_inner));
  m.summary = summary();
  return m;
}

}  // namespace tandem
