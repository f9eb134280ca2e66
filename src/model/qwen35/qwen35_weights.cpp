#include "model/qwen35/qwen35_weights.h"

#include <sstream>

#include "gguf/quants.h"
#include "model/tensor_binder.h"

namespace tandem {
namespace {

std::string blk(int i, const char* name) { return "blk." + std::to_string(i) + "." + name; }

void load_attention(const TensorBinder& b, const Qwen35HParams& hp, int i, Qwen35LayerWeights& L) {
  L.attn_q = b.matrix(blk(i, "attn_q.weight"), hp.n_embd, hp.q_proj_dim());
  L.attn_k = b.matrix(blk(i, "attn_k.weight"), hp.n_embd, hp.kv_dim());
  L.attn_v = b.matrix(blk(i, "attn_v.weight"), hp.n_embd, hp.kv_dim());
  L.attn_output = b.matrix(blk(i, "attn_output.weight"), static_cast<int64_t>(hp.n_head) * hp.head_dim, hp.n_embd);
  L.attn_q_norm = b.floats(blk(i, "attn_q_norm.weight"), {hp.head_dim});
  L.attn_k_norm = b.floats(blk(i, "attn_k_norm.weight"), {hp.head_dim});
}

void load_common(const TensorBinder& b, const Qwen35HParams& hp, int i, Qwen35LayerWeights& L) {
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
    f.fail("tensor '" + name + "' has shape " + tensor_shape_str(*t) + ": expected [n_embd = " + std::to_string(hp.n_embd) +
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
  mtp.draft_head = TensorBinder::to_matrix(*t);
}

}  // namespace

Qwen35Weights Qwen35Weights::load(const GgufFile& f, Qwen35HParams& hp) {
  TensorBinder b(f);
  Qwen35Weights w;
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) f.fail("missing required tensor 'token_embd.weight'");
  if (emb->n_dims != 2 || emb->ne[0] != hp.n_embd)
    f.fail("tensor 'token_embd.weight' has shape " + tensor_shape_str(*emb) + ": expected [n_embd = " +
           std::to_string(hp.n_embd) + ", n_vocab]");
  hp.n_vocab = emb->ne[1];
  w.token_embd = TensorBinder::to_matrix(*emb);
  w.output_norm = b.floats("output_norm.weight", {hp.n_embd});
  if (const GgufTensorInfo* out = b.find("output.weight", {hp.n_embd, hp.n_vocab})) {
    w.output = TensorBinder::to_matrix(*out);
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
      mtp.shared_head_norm = TensorBinder::to_floats(*t);
    if (const GgufTensorInfo* t = b.find(blk(m, "nextn.embed_tokens.weight"), {hp.n_embd, hp.n_vocab}))
      mtp.embed_tokens = TensorBinder::to_matrix(*t);
    if (const GgufTensorInfo* t = b.find(blk(m, "nextn.shared_head_head.weight"), {hp.n_embd, hp.n_vocab}))
      mtp.shared_head_head = TensorBinder::to_matrix(*t);
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
