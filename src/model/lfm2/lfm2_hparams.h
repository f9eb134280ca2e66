// Hyper-parameters of an lfm2 model (LiquidAI LFM2), read from the GGUF keys (spec hybrids.md A3):
// gated short-convolution layers and grouped-query attention layers, told apart by the per-layer
// attention.head_count_kv array (0 = a conv layer).
#pragma once

#include <string>

#include "gguf/gguf_file.h"
#include "model/layered_hparams.h"
#include "model/model_shape.h"

namespace tandem {

struct Lfm2HParams : LayeredHParams {
  float rope_freq_base = 10000.0f;
  int l_cache = 3;  // shortconv.l_cache: the conv's kernel width

  // Reads and validates; throws GgufError naming the key and what was expected, and refuses the
  // variants this model does not compute (sliding-window attention, non-causal attention).
  static Lfm2HParams from_gguf(const GgufFile& f);
  std::string summary() const;
  ModelShape shape() const;
};

}  // namespace tandem
