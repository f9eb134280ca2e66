// The tensors of a Qwen3.5 mmproj GGUF (spec vision.md §1.3), bound to the mapped file and checked
// against the hyper-parameters. Matrices stay in the mapping in their storage type (any type the
// kernels multiply: F32, F16, BF16, Q8_0, the K-quants); 1-D tensors and the position table are
// converted to float once.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/matmul/matmul.h"
#include "vision/vision_hparams.h"

namespace tandem::vision {

using kernels::WeightMatrix;

struct VisionLayerWeights {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;  // empty when the file has none (then not applied)
  WeightMatrix qkv, out, up, down;                // [C -> 3C], [C -> C], [C -> F], [F -> C]
  std::vector<float> qkv_b, out_b, up_b, down_b;  // empty: no bias
};

struct VisionWeights {
  // The two temporal patch kernels as matrices of C rows of 3·P·P values in (channel, ky, kx)
  // order — the layout of v.patch_embd.weight, ne [P, P, 3, C]. llama.cpp's CPU convolution
  // rounds pixels and kernel to F16 (its im2col is F16, spec §3.1/§3.8): an F32 kernel is
  // converted to F16 here, once, into patch_f16, and the products then round each patch to
  // F16 as the F16 matmul path does. A BF16 kernel keeps its type (llama.cpp's im2col is F32 then).
  WeightMatrix patch[2];
  std::vector<uint16_t> patch_f16[2];
  std::vector<float> patch_bias;  // [C]
  std::vector<float> pos_embd;    // [G*G][C], entry r*G + c = grid row r, column c (always F32 in files)
  std::vector<VisionLayerWeights> layers;
  std::vector<float> post_ln_w, post_ln_b;  // the merger's LayerNorm (optional)
  WeightMatrix mm0, mm2;                    // [4C -> 4C], [4C -> D]
  std::vector<float> mm0_b, mm2_b;

  // Binds and validates every tensor; fills hp.pos_side and hp.out_dim. Throws GgufError.
  static VisionWeights load(const GgufFile& f, VisionHParams& hp);
  // Bytes this struct owns (converted vectors; the matrices are in the mapping).
  size_t owned_bytes() const;
};

}  // namespace tandem::vision
