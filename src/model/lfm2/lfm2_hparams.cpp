#include "model/lfm2/lfm2_hparams.h"

#include <sstream>

namespace tandem {

Lfm2HParams Lfm2HParams::from_gguf(const GgufFile& f) {
  const KeyReader k(f, "lfm2");
  Lfm2HParams hp;
  hp.read_sizes(k);
  hp.read_layers(f, k);
  hp.rope_freq_base = static_cast<float>(f.get_float(k.key("rope.freq_base")).value_or(10000.0));
  if (!(hp.rope_freq_base > 1.0f)) f.fail("key '" + k.key("rope.freq_base") + "': expected a value > 1");
  if (const auto n_rot = f.get_uint(k.key("rope.dimension_count")); n_rot && static_cast<int64_t>(*n_rot) != hp.head_dim)
    f.fail("key '" + k.key("rope.dimension_count") + "' = " + std::to_string(*n_rot) +
           ": Tandem's lfm2 model rotates the whole head (" + std::to_string(hp.head_dim) + ")");
  hp.l_cache = static_cast<int>(k.positive("shortconv.l_cache", 64));
  if (hp.l_cache < 2) f.fail("key '" + k.key("shortconv.l_cache") + "' = 1: expected a kernel width > 1");
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
  const double E = static_cast<double>(n_embd);
  // The conv window holds the last L-1 products B⊙x; no scan state. A layer: in_proj, out_proj, the conv.
  ModelShape m = layered_shape("lfm2", static_cast<int64_t>(l_cache - 1) * n_embd, 0,
                               3 * E * E + E * E + static_cast<double>(l_cache) * E);
  m.summary = summary();
  return m;
}

}  // namespace tandem
