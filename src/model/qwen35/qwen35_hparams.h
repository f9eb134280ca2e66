// Hyper-parameters of a qwen35 model, read from the GGUF keys (spec §2.1).
// Nothing is hard-coded per model size: every shape the forward pass uses comes
// from here, and load_weights() checks every tensor against these numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/model_shape.h"

namespace tandem {

struct Qwen35HParams {
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int n_layer = 0;        // trunk layers = block_count - nextn_predict_layers
  int n_layer_all = 0;    // block_count
  int n_nextn = 0;        // MTP blocks appended after the trunk (0 or 1)
  std::vector<int64_t> n_ff;  // per layer (block_count entries)
  int n_head = 0, n_head_kv = 0, head_dim = 0;
  int n_rot = 0;
  int rope_sections[4] = {0, 0, 0, 0};
  float rope_freq_base = 10000.0f;
  float rms_eps = 0.0f;
  int64_t context_length = 0;
  // Gated DeltaNet
  int conv_kernel = 0;   // ssm.conv_kernel
  int d_state = 0;       // ssm.state_size = head dim d of the linear attention
  int H_k = 0;           // ssm.group_count
  int H_v = 0;           // ssm.time_step_rank
  int64_t ssm_inner = 0; // ssm.inner_size = H_v * d
  int full_attention_interval = 4;
  std::vector<bool> is_recurrent;  // per block (block_count entries); MTP blocks are never recurrent

  int64_t key_dim() const { return static_cast<int64_t>(H_k) * d_state; }
  int64_t value_dim() const { return static_cast<int64_t>(H_v) * d_state; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
  int64_t q_proj_dim() const { return 2LL * n_head * head_dim; }  // query and gate, interleaved per head
  int64_t kv_dim() const { return static_cast<int64_t>(n_head_kv) * head_dim; }
  int n_recurrent_layers() const;
  int n_attention_layers() const;  // trunk only

  // Reads and validates; throws GgufError naming the key and what was expected.
  static Qwen35HParams from_gguf(const GgufFile& f);
  std::string summary() const;
  // The shape the serving layers see (model/model_shape.h): one sequence's layout and the FLOPs.
  ModelShape shape() const;
};

}  // namespace tandem
