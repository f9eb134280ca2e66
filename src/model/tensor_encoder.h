// Generated weights into a tensor's storage type: values come from a fill function (a pure
// function of the element index, model/seeded_random.h), rows are encoded (F32 copied, F16/BF16
// converted, quantized types through gguf/quants) on a few threads. The generators of every
// architecture (qwen35, lfm2, granitehybrid) write their tensors through it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gguf/ggml_type.h"

namespace tandem {

// fill(first, n, dst): elements [first, first + n) of the tensor in ne[0]-contiguous order.
using TensorFill = std::function<void(int64_t first, int64_t n, float* dst)>;

// The encoded bytes of a tensor of shape ne (ne[0] contiguous) and type `type`; the result does
// not depend on n_threads.
std::vector<uint8_t> encode_generated_tensor(GgmlType type, const std::vector<int64_t>& ne, const TensorFill& fill,
                                             int n_threads);

}  // namespace tandem
