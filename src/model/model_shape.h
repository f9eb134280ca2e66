// What the layers above the model need to know of its shape, whatever the architecture: the
// vocabulary and row widths, one sequence's memory layout, and the FLOPs a prefix costs (the
// Marconi policy's ranking input). Each architecture fills one from its hyper-parameters
// (Qwen35HParams::shape, Lfm2HParams::shape, GraniteHybridHParams::shape); the replay model
// (agent/sim.h) reads it from a file without loading the weights (model/architectures.h).
#pragma once

#include <cstdint>
#include <string>

#include "model/sequence_state.h"

namespace tandem {

struct ModelShape {
  std::string architecture;  // general.architecture: qwen35, lfm2, granitehybrid
  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int64_t context_length = 0;  // the file's training context (0: not stated)
  int n_layer = 0;             // trunk layers, recurrent and attention
  SequenceLayout sequence;     // one sequence's recurrent planes and KV rows
  // Multiply-adds × 2 of every token's matrices and recurrent mixers, and of attention per
  // (query, key) pair (QKᵀ and AV): prefilling p tokens costs per_token·p + per_token_pair·p(p+1)/2.
  double flops_per_token = 0;
  double flops_per_token_pair = 0;
  std::string summary;  // one line for logs and tools
};

}  // namespace tandem
