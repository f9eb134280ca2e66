#include "model/qwen35_weights.h"

#include <sstream>

#include "gguf/quants.h"

namespace tandem {
namespace {

std::string shape_str(const GgufTensorInfo& t) {
  std::ostringstream s;
  s << "[";
  for (int i = 0; i < t.n_dims; ++i) s << (i ? ", " : "") << t.ne[i];
  s << "]";
  return s.str();
}

class Binder {
 public:
  explicit Binder(const GgufFile& f) : f_(f) {}

  const GgufTensorInfo& get(const std::string& name, std::vector<int64_t> ne) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (!t) f_.fail("missing required tensor '" + name + "'");
    check_shape(*t, ne);
    return *t;
  }
  const GgufTensorInfo* find(const std::string& name, std::vector<int64_t> ne) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (t) check_shape(*t, ne);
    return t;
  }

  WeightMatrix matrix(const std::string& name, int64_t cols, int64_t rows) const {
    return to_matrix(get(name, {cols, rows}));
  }
  static WeightMatrix to_matrix(const GgufTensorInfo& t) {
    WeightMatrix m;
    m.type = t.type;
    m.cols = t.ne[0];
    m.rows = t.ne[1];
    m.data = t.data;
    m.row_stride = row_bytes(t.type, t.ne[0]);
    return m;
  }
  std::vector<float> floats(const std::string& name, std::vector<int64_t> ne) const {
    return to_floats(get(name, ne));
  }
  static std::vector<float> to_floats(const GgufTensorInfo& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    dequantize_row(t.type, t.data, v.data(), t.n_elements());
    return v;
  }

 private:
  void check_shape(const GgufTensorInfo& t, const std::vector<int64_t>& ne) const {
    bool ok = t.n_dims == static_cast<int>(ne.size());
    for (size_t i = 0; ok && i < ne.size(); ++i) ok = t.ne[i] == ne[i];
    if (!ok) {
      std::ostringstream want;
      want << "[";
      for (size_t i = 0; i < ne.size(); ++i) want << (i ? ", " : "") << ne[i];
      want << "]";
      f_.fail("tensor '" + t.name + "' has shape " + shape_str(t) + ": expected " + want.str() +
              " from the hyper-parameters");
    }
  }
  const GgufFile& f_;
};

std::string blk(int i, const char* name) { return "blk." + std::to_string(i) + "." + name; }

void load_attention(const Binder& b, const Qwen35HParams& hp, int i, Qwen35LayerWeights& L) {
  L.attn_q = b.matrix(blk(i, "attn_q.weight"), hp.n_embd, hp.q_proj_dim());
  L.attn_k = b.matrix(blk(i, "attn_k.weight"), hp.n_embd, hp.kv_dim());
  L.attn_v = b.matrix(blk(i, "attn_v.weight"), hp.n_embd, hp.kv_dim());
  L.attn_output = b.matrix(blk(i, "attn_output.weight"), static_cast<int64_t>(hp.n_head) * hp.head_dim, hp.n_embd);
  L.attn_q_norm = b.floats(blk(i, "attn_q_norm.weight"), {hp.head_dim});
  L.attn_k_norm = b.floats(blk(i, "attn_k_norm.weight"), {hp.head_dim});
}

void load_common(const Binder& b, const Qwen35HParams& hp, int i, Qwen35LayerWeights& L) {
  L.attn_norm = b.floats(blk(i, "attn_norm.weight"), {hp.n_embd});
  L.post_attention_norm = b.floats(blk(i, "post_attention_norm.weight"), {hp.n_embd});
  L.ffn_gate = b.matrix(blk(i, "ffn_gate.weight"), hp.n_embd, hp.n_ff[i]);
  L.ffn_up = b.matrix(blk(i, "ffn_up.weight"), hp.n_embd, hp.n_ff[i]);
  L.ffn_down = b.matrix(blk(i, "ffn_down.weight"), hp.n_ff[i], hp.n_embd);
}

// The trimmed draft head and its token-id table: both or neither.
void load_draft_head(const GgufFile& f, const Qwen35HParams& hp, int m, Qwen35MtpWeights& mtp) {
  const std::string name = blk(m, "nextn.draft_head.weight");
  const GgufTensorInfo* t = f.find_tensor(name);
  const std::vector<int64_t>* ids = f.get_int_array(kDraftTokenIdsKey);
  if (!t && !ids) return;
  if (!t) f.fail(std::string("key '") + kDraftTokenIdsKey + "' present but tensor '" + name + "' is missing");
  if (!ids) f.fail("tensor '" + name + "' present but its token-id table '" + kDraftTokenIdsKey + "' is missing");
  if (t->n_dims != 2 || t->ne[0] != hp.n_embd || t->ne[1] < 1 || t->ne[1] > hp.n_vocab)
    f.fail("tensor '" + name + "' has shape " + shape_str(*t) + ": expected [n_embd = " + std::to_string(hp.n_embd) +
           ", R] with 1 <= R <= n_vocab = " + std::to_string(hp.n_vocab));
  if (static_cast<int64_t>(ids->size()) != t->ne[1])
    f.fail(std::string("key '") + kDraftTokenIdsKey + "' has " + std::to_string(ids->size()) + " ids for the " +
           std::to_string(t->ne[1]) + " rows of tensor '" + name + "'");
  std::vector<bool> seen(static_cast<size_t>(hp.n_vocab), false);
  mtp.draft_token_ids.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    const int64_t id = (*ids)[i];
    if (id < 0 || id >= hp.n_vocab)
      f.fail(std::string("key '") + kDraftTokenIdsKey + "': entry " + std::to_string(i) + " = " + std::to_string(id) +
             " outside the vocabulary [0, " + std::to_string(hp.n_vocab) + ")");
    if (seen[static_cast<size_t>(id)])
      f.fail(std::string("key '") + kDraftTokenIdsKey + "': token id " + std::to_string(id) + " appears twice");
    seen[static_cast<size_t>(id)] = true;
    mtp.draft_token_ids.push_back(static_cast<int32_t>(id));
  }
  mtp.draft_head = Binder::to_matrix(*t);
}

}  // namespace

Qwen35Weights Qwen35Weights::load(const GgufFile& f, Qwen35HParams& hp) {
  Binder b(f);
  Qwen35Weights w;
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) f.fail("missing required tensor 'token_embd.weight'");
  if (emb->n_dims != 2 || emb->ne[0] != hp.n_embd)
    f.fail("tensor 'token_embd.weight' has shape " + shape_str(*emb) + ": expected [n_embd = " +
           std::to_string(hp.n_embd) + ", n_vocab]");
  hp.n_vocab = emb->ne[1];
  w.token_embd = Binder::to_matrix(*emb);
  w.output_norm = b.floats("output_norm.weight", {hp.n_embd});
  if (const GgufTensorInfo* out = b.find("output.weight", {hp.n_embd, hp.n_vocab})) {
    w.output = Binder::to_matrix(*out);
  } else {
    w.output = w.token_embd;
    w.tied = true;
  }

  const int64_t d = hp.d_state;
  for (int i = 0; i < hp.n_layer; ++i) {
    Qwen35LayerWeights L;
    L.recurrent = hp.is_recurrent[i];
    load_common(b, hp, i, L);
    if (L.recurrent) {
      L.attn_qkv = b.matrix(blk(i, "attn_qkv.weight"), hp.n_embd, hp.conv_dim());
      L.attn_gate = b.matrix(blk(i, "attn_gate.weight"), hp.n_embd, hp.value_dim());
      L.ssm_beta = b.matrix(blk(i, "ssm_beta.weight"), hp.n_embd, hp.H_v);
      L.ssm_alpha = b.matrix(blk(i, "ssm_alpha.weight"), hp.n_embd, hp.H_v);
      L.ssm_out = b.matrix(blk(i, "ssm_out.weight"), hp.value_dim(), hp.n_embd);
      L.ssm_conv1d = b.floats(blk(i, "ssm_conv1d.weight"), {hp.conv_kernel, hp.conv_dim()});
      L.ssm_dt_bias = b.floats(blk(i, "ssm_dt.bias"), {hp.H_v});
      L.ssm_a = b.floats(blk(i, "ssm_a"), {hp.H_v});
      L.ssm_norm = b.floats(blk(i, "ssm_norm.weight"), {d});
    } else {
      load_attention(b, hp, i, L);
    }
    w.layers.push_back(std::move(L));
  }

  if (hp.n_nextn == 1) {
    const int m = hp.n_layer;
    Qwen35MtpWeights mtp;
    mtp.eh_proj = b.matrix(blk(m, "nextn.eh_proj.weight"), 2 * hp.n_embd, hp.n_embd);
    mtp.enorm = b.floats(blk(m, "nextn.enorm.weight"), {hp.n_embd});
    mtp.hnorm = b.floats(blk(m, "nextn.hnorm.weight"), {hp.n_embd});
    if (const GgufTensorInfo* t = b.find(blk(m, "nextn.shared_head_norm.weight"), {hp.n_embd}))
      mtp.shared_head_norm = Binder::to_floats(*t);
    if (const GgufTensorInfo* t = b.find(blk(m, "nextn.embed_tokens.weight"), {hp.n_embd, hp.n_vocab}))
      mtp.embed_tokens = Binder::to_matrix(*t);
    if (const GgufTensorInfo* t = b.find(blk(m, "nextn.shared_head_head.weight"), {hp.n_embd, hp.n_vocab}))
      mtp.shared_head_head = Binder::to_matrix(*t);
    mtp.block.recurrent = false;
    load_common(b, hp, m, mtp.block);
    load_attention(b, hp, m, mtp.block);
    load_draft_head(f, hp, m, mtp);
    w.mtp = std::move(mtp);
  } else if (f.find_tensor(blk(hp.n_layer, "nextn.draft_head.weight"))) {
    f.fail("tensor '" + blk(hp.n_layer, "nextn.draft_head.weight") +
           "' present but the file has no MTP block (nextn_predict_layers = 0)");
  }
  return w;
}

}  // namespace tandem
