// Dot product of one weight row (any supported storage type) with one activation
// row already converted to that type's vec_dot_type (see activation_quant.h).
//
// This is the plain scalar reference every fast kernel is tested against. Integer
// block sums are exact; the float accumulation follows ggml's generic code.
#pragma once

#include <cstdint>

#include "gguf/ggml_type.h"

namespace tandem::kernels {

float vec_dot_ref(GgmlType weight_type, int64_t n, const void* weight_row, const void* activation);

}  // namespace tandem::kernels
