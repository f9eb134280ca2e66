// Seeded random-weight LFM2 (`lfm2`) and Granite-4.0-H (`granitehybrid`, dense) GGUF models.
//
// Files carry exactly the metadata keys and tensors of converted real checkpoints (spec
// hybrids.md A3/A4, B3/B4, E4) with the weight distributions of the golden-hybrids models (their
// README, "Random weights"), quantized with llama-quantize's per-tensor rules (conv kernels, A, D,
// biases and norms stay F32). The vocabulary is the built-in byte-level one (as the golden files
// use a Qwen sub-tokenizer), padded to the preset's vocabulary size: these files test the forward
// pass and the serving mechanisms, not a tokenizer. Used by tandem-gen-model, tests and benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/qwen35/qwen35_generator.h"  // GenStats, the file types and the built-in vocabulary

namespace tandem {

struct HybridShape {
  std::string arch;               // "lfm2" or "granitehybrid"
  std::string preset = "custom";  // written into general.name
  int64_t n_vocab = 0;            // embedding rows; 0 = the built-in vocabulary's size
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0, n_head_kv = 0;  // head_dim = n_embd / n_head
  std::vector<bool> recurrent;    // per layer: short conv (lfm2) or Mamba2 (granitehybrid)
  float rms_eps = 1e-5f;
  uint32_t context_length = 128000;
  bool tied = true;
  // lfm2
  int64_t l_cache = 3;
  float rope_freq_base = 1e6f;
  // granitehybrid
  int64_t d_inner = 0, d_state = 0, n_ssm_head = 0, n_group = 1, d_conv = 4;
  float embedding_scale = 12.0f, residual_scale = 0.22f, logit_scale = 8.0f, attention_scale = 0.0f;  // 0: 1/sqrt(hd)

  int64_t n_layer() const { return static_cast<int64_t>(recurrent.size()); }
  int64_t head_dim() const { return n_embd / n_head; }
  int64_t conv_channels() const { return d_inner + 2 * n_group * d_state; }
  int64_t in_proj_rows() const { return 2 * d_inner + 2 * n_group * d_state + n_ssm_head; }
  // Throws std::invalid_argument naming the first inconsistent field.
  void validate() const;
  // "lfm2-tiny", "lfm2-350m", "lfm2-1.2b", "lfm2-2.6b", "granite-tiny", "granite-h-micro" (the real
  // shapes of spec hybrids.md A2/B2); throws std::invalid_argument for anything else.
  static HybridShape preset_shape(std::string_view name);
  static std::vector<std::string> preset_names();
};

struct HybridGenOptions {
  HybridShape shape = HybridShape::preset_shape("lfm2-tiny");
  uint64_t seed = 42;
  std::string ftype = "F32";  // the names qwen35_ftype_from_name accepts
  int n_threads = 2;          // workers (the result does not depend on it)
};

// Builds and writes path (atomically, via the writer's tmp + rename).
GenStats generate_hybrid_model(const HybridGenOptions& opt, const std::string& path);

}  // namespace tandem
