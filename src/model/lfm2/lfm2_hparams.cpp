#include "model/lfm2/lfm2_hparams.h"

#include <sstream>

#include "model/layer_pattern.h"

namespace tandem {

int Lfm2HParams::n_recurrent_layers() const {
  int n = 0;
  for (bool r : is_recurrent) n += r ? 1 : 0;
  return n;
}

Lfm2HParams Lfm2HParams::from_gguf(const GgufFile& f) {
  const KeyReader k(f, "lfm2");
  Lfm2HParams hp;
  hp.n_layer = static_cast<int>(k.positive("block_count", 4096));
  hp.n_embd = k.positive("embedding_length", 1 << 20);
  hp.n_ff = k.positive("feed_forward_length", 1 << 22);
  hp.n_head = static_cast<int>(k.positive("attention.head_count", 4096));
  const LayerPattern pat = read_layer_pattern(f, k, hp.n_layer, hp.n_head);
  hp.is_recurrent = pat.is_recurrent;
  hp.n_head_kv = pat.n_head_kv;
  hp.head_dim = static_cast<int>(k.head_dim(hp.n_embd, hp.n_head));
  hp.rms_eps = k.rms_eps();
  hp.rope_freq_base = static_cast<float>(f.get_float(k.key("rope.freq_base")).value_or(10000.0));
  if (!(hp.rope_freq_base > 1.0f)) f.fail("key '" + k.key("rope.freq_base") + "': expected a value > 1");
  if (const auto n_rot = f.get_uint(k.key("rope.dimension_count")); n_rot && static_cast<int64_t>(*n_rot) != hp.head_dim)
    f.fail("key '" + k.key("rope.dimension_count") + "' = " + std::to_string(*n_rot) +
           ": Tandem's lfm2 model rotates the whole head (" + std::to_string(hp.head_dim) + ")");
  hp.l_cache = static_cast<int>(k.positive("shortconv.l_cache", 64));
  if (hp.l_cache < 2) f.fail("key '" + k.key("shortconv.l_cache") + "' = 1: expected a kernel width > 1");
  hp.context_length = static_cast<int64_t>(f.get_uint(k.key("context_length")).value_or(0));
  if (const auto swa = f.get_uint(k.key("attention.sliding_window")); swa && *swa > 0)
    f.fail("key '" + k.key("attention.sliding_window") + "' = " + std::to_string(*swa) +
           ": sliding-window attention is not supported by Tandem's lfm2 model (released LFM2 files do not use it)");
  if (const auto causal = f.get_bool(k.key("attention.causal")); causal && !*causal)
    f.fail("key '" + k.key("attention.causal") + "' = false: non-causal (embedding) LFM2 variants are not supported");
  hp.n_vocab = vocab_rows(f);
  return hp;
}

std::string Lfm2HParams::summary() const {
  std::ostringstream s;
  s << "lfm2: " << n_layer << " layers (" << n_recurrent_layers() << " short conv, " << n_attention_layers()
    << " attention), n_embd " << n_embd << ", n_ff " << n_ff << ", heads " << n_head << "/" << n_head_kv << " x "
    << head_dim << ", L_cache " << l_cache << ", vocab " << n_vocab;
  return s.str();
}

ModelShape Lfm2HParams::shape() const {
  ModelShape m;
  m.architecture = "lfm2";
  m.n_vocab = n_vocab;
  m.n_embd = n_embd;
  m.context_length = context_length;
  m.n_layer = n_layer;
  m.sequence.n_recurrent = n_recurrent_layers();
  m.sequence.conv_floats = static_cast<int64_t>(l_cache - 1) * n_embd;  // the last L-1 products B⊙x
  m.sequence.ssm_floats = 0;                                            // no scan state
  m.sequence.n_attention = n_attention_layers();
  m.sequence.kv_dim = kv_dim();
  const double E = static_cast<double>(n_embd);
  double linear = 0;
  for (int il = 0; il < n_layer; ++il) {
    linear += 3 * E * static_cast<double>(n_ff);
    if (is_recurrent[il])
      linear += 3 * E * E + E * E + static_cast<double>(l_cache) * E;  // in_proj, out_proj, the conv
    else
      linear += 2 * E * static_cast<double>(n_head) * head_dim + 2 * E * static_cast<double>(kv_dim());
  }
  m.flops_per_token = 2 * linear;
  m.flops_per_token_pair = 4.0 * n_attention_layers() * n_head * head_dim;
  m.summary = summary();
  return m;
}

}  // namespace tandem
