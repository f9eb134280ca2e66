// FLOPs to prefill a prefix of p tokens: linear work per token plus attention work per
// (query, key) pair. Marconi ranks checkpoints by the FLOPs they save per byte held.
#pragma once

#include <cstdint>

#include "model/model_shape.h"

namespace tandem::serve {

struct FlopModel {
  double per_token = 1.0;       // projections, FFN, delta rule: every token
  double per_token_pair = 0.0;  // full-attention scores and weighted sums: every (query, key) pair

  double prefix(int64_t p) const {
    const double x = static_cast<double>(p);
    return per_token * x + per_token_pair * x * (x + 1) / 2;
  }
  // Multiply-adds (x2) of the trunk's matrices and attention of this model (each architecture
  // counts its own: ModelShape).
  static FlopModel for_model(const ModelShape& shape);
};

}  // namespace tandem::serve
