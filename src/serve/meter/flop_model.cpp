#include "serve/meter/flop_model.h"

namespace tandem::serve {

FlopModel FlopModel::for_model(const ModelShape& shape) {
  FlopModel m;
  m.per_token = shape.flops_per_token;
  m.per_token_pair = shape.flops_per_token_pair;
  return m;
}

}  // namespace tandem::serve
