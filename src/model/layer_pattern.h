// GGUF reading shared by the architectures whose layer kinds come from a per-layer
// attention.head_count_kv array (lfm2, granitehybrid; spec hybrids.md A1, B1): a layer with 0 KV
// heads is recurrent, the others are attention layers. Errors name the file and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace tandem {

// "<arch>.<suffix>" keys, with the checks every architecture repeats.
class KeyReader {
 public:
  KeyReader(const GgufFile& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  std::string key(const std::string& suffix) const { return arch_ + "." + suffix; }
  // A required unsigned key in [1, max].
  int64_t positive(const std::string& suffix, int64_t max) const;
  // attention.key_length (= value_length), or n_embd / n_head when absent.
  int64_t head_dim(int64_t n_embd, int n_head) const;
  // attention.layer_norm_rms_epsilon, required, in (0, 1).
  float rms_eps() const;

 private:
  const GgufFile& f_;
  std::string arch_;
};

struct LayerPattern {
  std::vector<bool> is_recurrent;
  int n_head_kv = 0;  // the attention layers' KV heads (all equal)
};
// Reads attention.head_count_kv: an integer array of n_layer entries (or one number: every layer
// attention). Attention layers must share one KV-head count dividing n_head.
LayerPattern read_layer_pattern(const GgufFile& f, const KeyReader& k, int n_layer, int n_head);

// Rows of token_embd.weight: the vocabulary the model computes logits for.
int64_t vocab_rows(const GgufFile& f);

}  // namespace tandem
