#include "model/qwen35/qwen35_hparams.h"

#include <sstream>

namespace tandem {
namespace {

constexpr const char* kArch = "qwen35";

std::string key(const char* suffix) { return std::string(kArch) + "." + suffix; }

// A u32 key, or a per-layer array whose entries must all be equal (we support uniform layers).
int64_t uniform_int(const GgufFile& f, const std::string& k, int64_t fallback, bool required) {
  const GgufValue* v = f.find(k);
  if (!v) {
    if (required) f.fail("missing required key '" + k + "'");
    return fallback;
  }
  if (v->is_array()) {
    if (v->ints.empty()) f.fail("key '" + k + "': expected a non-empty integer array");
    for (int64_t x : v->ints)
      if (x != v->ints[0]) f.fail("key '" + k + "': per-layer values differ; only uniform layers are supported");
    return v->ints[0];
  }
  return static_cast<int64_t>(f.require_uint(k));
}

void check_positive(const GgufFile& f, const std::string& k, int64_t v, int64_t max = int64_t{1} << 31) {
  if (v <= 0 || v > max)
    f.fail("key '" + k + "' = " + std::to_string(v) + ": expected a positive value <= " + std::to_string(max));
}

}  // namespace

int Qwen35HParams::n_recurrent_layers() const {
  int n = 0;
  for (int i = 0; i < n_layer; ++i) n += is_recurrent[i] ? 1 : 0;
  return n;
}
int Qwen35HParams::n_attention_layers() const { return n_layer - n_recurrent_layers(); }

Qwen35HParams Qwen35HParams::from_gguf(const GgufFile& f) {
  const std::string arch = f.require_string("general.architecture");
  if (arch != kArch) f.fail("general.architecture is '" + arch + "': expected 'qwen35'");

  Qwen35HParams hp;
  hp.n_layer_all = static_cast<int>(f.require_uint(key("block_count")));
  check_positive(f, key("block_count"), hp.n_layer_all, 4096);
  hp.n_nextn = static_cast<int>(f.get_uint(key("nextn_predict_layers")).value_or(0));
  if (hp.n_nextn >= hp.n_layer_all)
    f.fail("key '" + key("nextn_predict_layers") + "' = " + std::to_string(hp.n_nextn) +
           ": expected fewer than block_count (" + std::to_string(hp.n_layer_all) + ")");
  if (hp.n_nextn > 1) f.fail("key '" + key("nextn_predict_layers") + "': only 0 or 1 MTP blocks are supported");
  hp.n_layer = hp.n_layer_all - hp.n_nextn;

  hp.n_embd = static_cast<int64_t>(f.require_uint(key("embedding_length")));
  check_positive(f, key("embedding_length"), hp.n_embd, 1 << 20);
  const int64_t ff = uniform_int(f, key("feed_forward_length"), 0, true);
  check_positive(f, key("feed_forward_length"), ff, 1 << 22);
  hp.n_ff.assign(hp.n_layer_all, ff);
  hp.n_head = static_cast<int>(uniform_int(f, key("attention.head_count"), 0, true));
  check_positive(f, key("attention.head_count"), hp.n_head, 4096);
  hp.n_head_kv = static_cast<int>(uniform_int(f, key("attention.head_count_kv"), hp.n_head, false));
  check_positive(f, key("attention.head_count_kv"), hp.n_head_kv, 4096);
  if (hp.n_head % hp.n_head_kv != 0)
    f.fail("attention.head_count (" + std::to_string(hp.n_head) + ") must be a multiple of head_count_kv (" +
           std::to_string(hp.n_head_kv) + ")");
  hp.head_dim = static_cast<int>(f.get_uint(key("attention.key_length")).value_or(hp.n_embd / hp.n_head));
  check_positive(f, key("attention.key_length"), hp.head_dim, 1 << 16);
  const int64_t vlen = static_cast<int64_t>(f.get_uint(key("attention.value_length")).value_or(hp.head_dim));
  if (vlen != hp.head_dim)
    f.fail("attention.value_length (" + std::to_string(vlen) + ") must equal key_length (" +
           std::to_string(hp.head_dim) + ")");
  hp.rms_eps = static_cast<float>(f.require_float(key("attention.layer_norm_rms_epsilon")));
  if (!(hp.rms_eps > 0.0f && hp.rms_eps < 1.0f))
    f.fail("key '" + key("attention.layer_norm_rms_epsilon") + "': expected a value in (0, 1)");
  hp.rope_freq_base = static_cast<float>(f.get_float(key("rope.freq_base")).value_or(10000.0));
  if (!(hp.rope_freq_base > 1.0f)) f.fail("key '" + key("rope.freq_base") + "': expected a value > 1");
  hp.n_rot = static_cast<int>(f.get_uint(key("rope.dimension_count")).value_or(hp.head_dim));
  if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
    f.fail("key '" + key("rope.dimension_count") + "' = " + std::to_string(hp.n_rot) +
           ": expected an even value in [2, head_dim = " + std::to_string(hp.head_dim) + "]");
  {
    const std::string k = key("rope.dimension_sections");
    const GgufValue* v = f.find(k);
    if (!v) f.fail("missing required key '" + k + "'");
    if (!v->is_array() || v->ints.empty() || v->ints.size() > 4)
      f.fail("key '" + k + "': expected an integer array of up to 4 sections");
    for (size_t i = 0; i < v->ints.size(); ++i) hp.rope_sections[i] = static_cast<int>(v->ints[i]);
  }
  hp.context_length = static_cast<int64_t>(f.get_uint(key("context_length")).value_or(4096));

  hp.conv_kernel = static_cast<int>(f.require_uint(key("ssm.conv_kernel")));
  check_positive(f, key("ssm.conv_kernel"), hp.conv_kernel, 64);
  if (hp.conv_kernel < 2) f.fail("key '" + key("ssm.conv_kernel") + "': expected >= 2");
  hp.d_state = static_cast<int>(f.require_uint(key("ssm.state_size")));
  check_positive(f, key("ssm.state_size"), hp.d_state, 4096);
  hp.H_k = static_cast<int>(f.require_uint(key("ssm.group_count")));
  check_positive(f, key("ssm.group_count"), hp.H_k, 4096);
  hp.H_v = static_cast<int>(f.require_uint(key("ssm.time_step_rank")));
  check_positive(f, key("ssm.time_step_rank"), hp.H_v, 4096);
  if (hp.H_v % hp.H_k != 0)
    f.fail("ssm.time_step_rank (" + std::to_string(hp.H_v) + ") must be a multiple of ssm.group_count (" +
           std::to_string(hp.H_k) + ")");
  hp.ssm_inner = static_cast<int64_t>(f.require_uint(key("ssm.inner_size")));
  if (hp.ssm_inner != hp.value_dim())
    f.fail("ssm.inner_size = " + std::to_string(hp.ssm_inner) + ": expected time_step_rank * state_size = " +
           std::to_string(hp.value_dim()));
  hp.full_attention_interval = static_cast<int>(f.get_uint(key("full_attention_interval")).value_or(4));
  check_positive(f, key("full_attention_interval"), hp.full_attention_interval, 4096);

  hp.is_recurrent.assign(hp.n_layer_all, false);
  if (const GgufValue* v = f.find(key("attention.recurrent_layers"))) {
    if (!v->is_array() || v->ints.size() != static_cast<size_t>(hp.n_layer_all))
      f.fail("key '" + key("attention.recurrent_layers") + "': expected an array of block_count (" +
             std::to_string(hp.n_layer_all) + ") flags");
    for (int i = 0; i < hp.n_layer; ++i) hp.is_recurrent[i] = v->ints[i] != 0;
  } else {
    for (int i = 0; i < hp.n_layer; ++i) hp.is_recurrent[i] = (i + 1) % hp.full_attention_interval != 0;
  }
  return hp;
}

std::string Qwen35HParams::summary() const {
  std::ostringstream s;
  s << "qwen35: n_vocab=" << n_vocab << " n_embd=" << n_embd << " layers=" << n_layer << " ("
    << n_recurrent_layers() << " GDN, " << n_attention_layers() << " attention) mtp=" << n_nextn
    << " n_ff=" << n_ff[0] << " heads=" << n_head << "/" << n_head_kv << "x" << head_dim << " n_rot=" << n_rot
    << " GDN H_k=" << H_k << " H_v=" << H_v << " d=" << d_state << " conv=" << conv_kernel;
  return s.str();
}

ModelShape Qwen35HParams::shape() const {
  ModelShape m;
  m.architecture = "qwen35";
  m.n_vocab = n_vocab;
  m.n_embd = n_embd;
  m.context_length = context_length;
  m.n_layer = n_layer;
  m.sequence.n_recurrent = n_recurrent_layers();
  m.sequence.conv_floats = static_cast<int64_t>(conv_kernel - 1) * conv_dim();
  m.sequence.ssm_floats = static_cast<int64_t>(H_v) * d_state * d_state;
  m.sequence.n_attention = n_attention_layers();
  m.sequence.kv_dim = kv_dim();
  double linear = 0;
  const double E = static_cast<double>(n_embd);
  for (int il = 0; il < n_layer; ++il) {
    const double ff = il < static_cast<int>(n_ff.size()) ? static_cast<double>(n_ff[il]) : 0.0;
    linear += 3 * E * ff;  // gate, up, down
    if (il < static_cast<int>(is_recurrent.size()) && is_recurrent[il]) {
      // qkv (conv_dim), z (value_dim), beta and alpha (H_v each) in; value_dim out; delta rule d x d per head.
      linear += E * (conv_dim() + value_dim() + 2.0 * H_v) + value_dim() * E;
      linear += 4.0 * H_v * d_state * d_state;
    } else {
      linear += E * (q_proj_dim() + 2.0 * kv_dim()) + static_cast<double>(n_head) * head_dim * E;
    }
  }
  m.flops_per_token = 2 * linear;
  m.flops_per_token_pair = 4.0 * n_attention_layers() * n_head * head_dim;  // QK^T and AV
  m.summary = summary();
  return m;
}

}  // namespace tandem
