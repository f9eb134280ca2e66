// Hyper-parameters of a granitehybrid model (IBM Granite-4.0-H, dense-FFN variants such as
// H-Micro, H-1B, H-350M), read from the GGUF keys (spec hybrids.md B3): Mamba2 layers and
// grouped-query attention layers without positional encoding, told apart by the per-layer
// attention.head_count_kv array, plus Granite's embedding / residual / attention / logit scalings.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"
#include "model/layered_hparams.h"
#include "model/model_shape.h"

namespace tandem {

struct GraniteHybridHParams : LayeredHParams {
  // Scalings; 0 in the file (or absent) means none (1 here, and the attention's 1/sqrt(head_dim)).
  float embedding_scale = 1.0f;
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;       // logits are divided by it
  float attention_scale = 0.0f;   // on QKᵀ
  // Mamba2 (spec B5.1).
  int d_conv = 4;                 // ssm.conv_kernel
  int64_t d_inner = 0;            // ssm.inner_size
  int d_state = 0;                // ssm.state_size
  int n_ssm_head = 0;             // ssm.time_step_rank (the number of SSM heads, not a rank)
  int n_group = 1;                // ssm.group_count

  int ssm_head_dim() const { return static_cast<int>(d_inner / n_ssm_head); }
  int64_t conv_channels() const { return d_inner + 2LL * n_group * d_state; }     // x | B | C
  int64_t in_proj_rows() const { return 2 * d_inner + 2LL * n_group * d_state + n_ssm_head; }  // z | xBC | dt

  // Reads and validates; throws GgufError naming the key and what was expected. MoE variants
  // (expert_count > 0: H-Tiny, H-Small) and RoPE files (rope.scaling.finetuned = true) are refused.
  static GraniteHybridHParams from_gguf(const GgufFile& f);
  std::string summary() const;
  ModelShape shape() const;
};

}  // namespace tandem
