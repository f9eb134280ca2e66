// Weight matrix × activations, the one product every projection of the model uses.
//
// A weight is stored as ggml does: `rows` rows of `cols` elements, each row
// block-quantized. Activations are T token rows of `cols` floats; the result is T
// rows of `rows` floats: Y[t][o] = W[o] · X[t]. Each activation row is first
// converted to the weight's vec_dot_type, exactly as ggml-cpu does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "runtime/scratch.h"

namespace tandem::kernels {

struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  int64_t cols = 0;  // ne[0], the contiguous (input) dimension
  int64_t rows = 0;  // ne[1], the output dimension
  const uint8_t* data = nullptr;
  size_t row_stride = 0;  // bytes per row

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_stride; }
};

// Y[t*ldy + o] = sum_i W[o][i] * X[t*ldx + i] for t < T, o < W.rows.
void matmul(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy,
            ScratchBuffer& scratch);

// The plain scalar reference of matmul (one vec_dot_ref per output), for tests.
void matmul_ref(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy);

}  // namespace tandem::kernels
