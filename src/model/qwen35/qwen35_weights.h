// The tensors of a qwen35 GGUF (spec §3), bound to the mapped file and checked
// against the hyper-parameters. Matrices stay in the mapping in their storage
// type; small 1-D tensors (norms, biases, decays, conv taps) are converted to
// float once at load time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/matmul/matmul.h"
#include "model/qwen35/qwen35_hparams.h"

namespace tandem {

using kernels::WeightMatrix;

// Names of the trimmed draft head (written by tools/tandem-trim-draft).
inline constexpr char kDraftTokenIdsKey[] = "tandem.draft.token_ids";
inline std::string draft_head_tensor_name(int n_layer) {
  return "blk." + std::to_string(n_layer) + ".nextn.draft_head.weight";
}

struct Qwen35LayerWeights {
  bool recurrent = false;
  std::vector<float> attn_norm, post_attention_norm;
  WeightMatrix ffn_gate, ffn_up, ffn_down;
  // Gated DeltaNet layer.
  WeightMatrix attn_qkv, attn_gate, ssm_beta, ssm_alpha, ssm_out;
  std::vector<float> ssm_conv1d, ssm_dt_bias, ssm_a, ssm_norm;
  // Full-attention layer.
  WeightMatrix attn_q, attn_k, attn_v, attn_output;
  std::vector<float> attn_q_norm, attn_k_norm;
};

struct Qwen35MtpWeights {
  WeightMatrix eh_proj;
  std::vector<float> enorm, hnorm, shared_head_norm;  // shared_head_norm empty → output_norm
  std::optional<WeightMatrix> embed_tokens, shared_head_head;
  Qwen35LayerWeights block;  // a full-attention block
  // Optional trimmed draft head (tools/tandem-trim-draft, docs/speculation.md): R rows of the
  // MTP head's output matrix and the original token id of each row, metadata
  // tandem.draft.token_ids (R distinct ids in [0, n_vocab)). Two forms in a file: the ids alone
  // (the rows are gathered at load into draft_rows: a file llama.cpp loads unchanged, since it
  // ignores unknown keys but refuses unknown tensors), or the ids beside the rows as a tensor
  // blk.{n_layer}.nextn.draft_head.weight [n_embd, R].
  std::optional<WeightMatrix> draft_head;
  std::vector<int32_t> draft_token_ids;
  // The gathered rows of the ids-only form (draft_head points into them; shared, so that a copy
  // of the weights keeps pointing at live bytes).
  std::shared_ptr<std::vector<uint8_t>> draft_rows;
};

struct Qwen35Weights {
  WeightMatrix token_embd;  // n_vocab rows of n_embd
  std::vector<float> output_norm;
  WeightMatrix output;      // == token_embd when tied
  bool tied = false;
  std::vector<Qwen35LayerWeights> layers;  // trunk layers
  std::optional<Qwen35MtpWeights> mtp;

  // Binds and validates every tensor. Fills hp.n_vocab. Throws GgufError.
  static Qwen35Weights load(const GgufFile& f, Qwen35HParams& hp);
};

}  // namespace tandem
