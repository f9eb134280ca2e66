#include "kernels/matmul.h"

#include <vector>

#include "kernels/activation_quant.h"
#include "kernels/vec_dot.h"

namespace tandem::kernels {

void matmul(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy,
            ScratchBuffer& scratch) {
  const GgmlType act_type = traits(W.type).vec_dot_type;
  const size_t act_row = activation_bytes(act_type, W.cols);
  auto* act = static_cast<uint8_t*>(scratch.get(act_row * static_cast<size_t>(T)));
  for (int64_t t = 0; t < T; ++t) quantize_activation(act_type, X + t * ldx, act + t * act_row, W.cols);
  // Row-outer: every weight row is read once and applied to all T activations.
  for (int64_t o = 0; o < W.rows; ++o) {
    const uint8_t* w = W.row(o);
    for (int64_t t = 0; t < T; ++t) Y[t * ldy + o] = vec_dot_ref(W.type, W.cols, w, act + t * act_row);
  }
}

void matmul_ref(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy) {
  const GgmlType act_type = traits(W.type).vec_dot_type;
  std::vector<uint8_t> act(activation_bytes(act_type, W.cols));
  for (int64_t t = 0; t < T; ++t) {
    quantize_activation(act_type, X + t * ldx, act.data(), W.cols);
    for (int64_t o = 0; o < W.rows; ++o) Y[t * ldy + o] = vec_dot_ref(W.type, W.cols, W.row(o), act.data());
  }
}

}  // namespace tandem::kernels
