#include "model/layer_pattern.h"

namespace tandem {

int64_t KeyReader::positive(const std::string& suffix, int64_t max) const {
  const std::string k = key(suffix);
  const int64_t v = static_cast<int64_t>(f_.require_uint(k));
  if (v <= 0 || v > max) f_.fail("key '" + k + "' = " + std::to_string(v) + ": expected a positive value <= " + std::to_string(max));
  return v;
}

int64_t KeyReader::head_dim(int64_t n_embd, int n_head) const {
  const int64_t hd = static_cast<int64_t>(f_.get_uint(key("attention.key_length")).value_or(n_embd / n_head));
  if (hd <= 0 || hd > (1 << 16))
    f_.fail("key '" + key("attention.key_length") + "' = " + std::to_string(hd) + ": expected a positive head size");
  const int64_t vlen = static_cast<int64_t>(f_.get_uint(key("attention.value_length")).value_or(hd));
  if (vlen != hd)
    f_.fail("attention.value_length (" + std::to_string(vlen) + ") must equal key_length (" + std::to_string(hd) + ")");
  return hd;
}

float KeyReader::rms_eps() const {
  const std::string k = key("attention.layer_norm_rms_epsilon");
  const float eps = static_cast<float>(f_.require_float(k));
  if (!(eps > 0.0f && eps < 1.0f)) f_.fail("key '" + k + "': expected a value in (0, 1)");
  return eps;
}

LayerPattern read_layer_pattern(const GgufFile& f, const KeyReader& k, int n_layer, int n_head) {
  const std::string key = k.key("attention.head_count_kv");
  const GgufValue* v = f.find(key);
  if (!v) f.fail("missing required key '" + key + "' (per layer: 0 for a recurrent layer, the KV heads of an attention layer)");
  std::vector<int64_t> kv;
  if (v->is_array()) {
    const std::vector<int64_t>* a = f.get_int_array(key);
    kv = *a;
    if (static_cast<int>(kv.size()) != n_layer)
      f.fail("key '" + key + "' has " + std::to_string(kv.size()) + " entries: expected one per layer (" +
             std::to_string(n_layer) + ")");
  } else {
    kv.assign(static_cast<size_t>(n_layer), static_cast<int64_t>(f.require_uint(key)));
  }
  LayerPattern p;
  for (int il = 0; il < n_layer; ++il) {
    const int64_t h = kv[static_cast<size_t>(il)];
    if (h < 0 || h > n_head || (h > 0 && n_head % h != 0))
      f.fail("key '" + key + "' entry " + std::to_string(il) + " = " + std::to_string(h) +
             ": expected 0 (recurrent) or a divisor of attention.head_count (" + std::to_string(n_head) + ")");
    if (h > 0 && p.n_head_kv > 0 && h != p.n_head_kv)
      f.fail("key '" + key + "': attention layers with different KV-head counts (" + std::to_string(p.n_head_kv) +
             " and " + std::to_string(h) + ") are not supported");
    if (h > 0) p.n_head_kv = static_cast<int>(h);
    p.is_recurrent.push_back(h == 0);
  }
  return p;
}

int64_t vocab_rows(const GgufFile& f) {
  const GgufTensorInfo* t = f.find_tensor("token_embd.weight");
  if (!t) f.fail("missing required tensor 'token_embd.weight'");
  if (t->n_dims != 2 || t->ne[1] <= 0) f.fail("tensor 'token_embd.weight': expected a 2-D [n_embd, n_vocab] matrix");
  return t->ne[1];
}

}  // namespace tandem
