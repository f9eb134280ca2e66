// The host's way to the DSP side: what any transport must provide, whichever carries the ops.
// Here one implementation (qemu_transport.h: the op server under qemu-hexagon-static over a
// pipe); on a phone, FastRPC / dspqueue is another (docs/hexagon.md). Matrices are loaded once
// and named by a handle; products run against a handle; every failure — a refusal, a DSP side
// that died or stopped answering — is a HexagonError naming the op, never a hang.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "gguf/ggml_type.h"

namespace tandem::hexagon {

struct HexagonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // rows × cols weights in gguf row layout (Q4_0 or Q8_0): the handle of the DSP side's copy.
  virtual uint32_t load_matrix(GgmlType type, int rows, int cols, const void* gguf_rows) = 0;
  // n_columns activation rows of cols, as Q8_0 blocks (kernels::quantize_activation) ->
  // out[c · rows + r], the column-shared product for n_columns > 1.
  virtual void matmul(uint32_t matrix, const void* q8_0_columns, int n_columns, float* out) = 0;
  virtual void release(uint32_t matrix) = 0;
};

}  // namespace tandem::hexagon
