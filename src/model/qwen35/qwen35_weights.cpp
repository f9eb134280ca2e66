#include "model/qwen35/qwen35_weights.h"

#include <algorithm>
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

// The draft head's token-id table, checked: R distinct ids in [0, n_vocab).
std::vector<int32_t> draft_ids(const GgufFile& f, const Qwen35HParams& hp, const std::vector<int64_t>& ids) {
  if (ids.empty()) f.fail(std::string("key '") + kDraftTokenIdsKey + "' is empty: expected 1..n_vocab token ids");
  if (static_cast<int64_t>(ids.size()) > hp.n_vocab)
    f.fail(std::string("key '") + kDraftTokenIdsKey + "' has " + std::to_string(ids.size()) + " ids for a vocabulary of " +
           std::to_string(hp.n_vocab));
  std::vector<bool> seen(static_cast<size_t>(hp.n_vocab), false);
  std::vector<int32_t> out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= hp.n_vocab)
      f.fail(std::string("key '") + kDraftTokenIdsKey + "': entry " + std::to_string(i) + " = " + std::to_string(id) +
             " outside the vocabulary [0, " + std::to_string(hp.n_vocab) + ")");
    if (seen[static_cast<size_t>(id)])
      f.fail(std::string("key '") + kDraftTokenIdsKey + "': token id " + std::to_string(id) + " appears twice");
    seen[static_cast<size_t>(id)] = true;
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

// The trimmed draft head: the token-id table alone (the rows gathered here from `head`, the
// matrix the MTP head drafts through), or the table with its rows as a tensor. A tensor without
// its table is refused.
void load_draft_head(const GgufFile& f, const Qwen35HParams& hp, int m, const WeightMatrix& head, Qwen35MtpWeights& mtp) {
  const std::string name = blk(m, "nextn.draft_head.weight");
  const GgufTensorInfo* t = f.find_tensor(name);
  const std::vector<int64_t>* ids = f.get_int_array(kDraftTokenIdsKey);
  if (!t && !ids) return;
  if (!ids) f.fail("tensor '" + name + "' present but its token-id table '" + kDraftTokenIdsKey + "' is missing");
  mtp.draft_token_ids = draft_ids(f, hp, *ids);
  const int64_t R = static_cast<int64_t>(mtp.draft_token_ids.size());
  if (!t) {
    // Rows in the head's storage type, so that drafting multiplies the same bytes the full
    // head would: the trimmed head's logits are the full head's at those ids, bit for bit.
    mtp.draft_rows = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(R) * head.row_stride);
    uint8_t* rows = mtp.draft_rows->data();
    for (int64_t r = 0; r < R; ++r)
      std::copy_n(head.row(mtp.draft_token_ids[static_cast<size_t>(r)]), head.row_stride,
                  rows + static_cast<size_t>(r) * head.row_stride);
    WeightMatrix d = head;
    d.rows = R;
    d.data = rows;
    d.packed = nullptr;
    mtp.draft_head = d;
    return;
  }
  if (t->n_dims != 2 || t->ne[0] != hp.n_embd || t->ne[1] != R)
    f.fail("tensor '" + name + "' has shape " + tensor_shape_str(*t) + ": expected [n_embd = " + std::to_string(hp.n_embd) +
           ", R = " + std::to_string(R) + "], one row per id of '" + kDraftTokenIdsKey + "'");
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
    load_draft_head(f, hp, m, mtp.shared_head_head ? *mtp.shared_head_head : w.output, mtp);
    w.mtp = std::move(mtp);
  } else if (f.find_tensor(blk(hp.n_layer, "nextn.draft_head.weight"))) {
    f.fail("tensor '" + blk(hp.n_layer, "nextn.draft_head.weight") +
           "' present but the file has no MTP block (nextn_predict_layers = 0)");
  }
  return w;
}

}  // namespace tandem
