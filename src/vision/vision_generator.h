// Seeded random-weight mmproj GGUF files for the Qwen3.5 vision towers (spec vision.md §1 and
// §8): the key set and tensor names llama.cpp's converter writes for projector qwen3vl_merger,
// the real shapes of the 0.8B / 2B / 4B / 9B towers, the converter's per-tensor type rules, and
// the golden mmproj's weight distributions (matrices N(0,1)/sqrt(fan_in), biases 0.1·N, LayerNorm
// weights 1 + 0.2·N, LayerNorm biases 0.1·N, position table 0.5·N). Used by
// `tandem-gen-model --mmproj`, the tests and the benchmarks. Not linked into the server.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/gguf_writer.h"

namespace tandem::vision {

struct VisionTowerShape {
  std::string preset = "custom";
  int64_t n_embd = 0, n_head = 0, n_ff = 0, n_layer = 0;
  int64_t out_dim = 0;     // D: the text model's n_embd
  int64_t pos_side = 48;   // G (num_position_embeddings = G*G)
  int64_t patch_size = 16;
  float eps = 1e-6f;

  void validate() const;  // std::invalid_argument naming the field
  // "tiny" (the golden tower: C 64, 4 heads, F 128, 2 blocks, G 6, D 256), "0.8b", "2b", "4b", "9b".
  static VisionTowerShape preset_shape(std::string_view name);
  static std::vector<std::string> preset_names();
};

struct MmprojGenOptions {
  VisionTowerShape shape = VisionTowerShape::preset_shape("tiny");
  // The matrices' type: F32, F16, BF16, Q8_0 (what the converter writes), or Q4_0 / Q4_K / Q5_K /
  // Q6_K; a K-quant matrix whose width is not a multiple of 256 falls back to Q8_0. The patch
  // kernels are F16 in an F16 file and F32 otherwise; 1-D tensors and the position table are F32.
  GgmlType type = GgmlType::F16;
  uint64_t seed = 31415;
  int n_threads = 2;  // quantization workers (the bytes do not depend on it)
};

GgufWriter build_mmproj_gguf(const MmprojGenOptions& opt);
// Writes the file; returns its size in bytes. Throws std::invalid_argument / GgufError.
size_t write_mmproj(const std::string& path, const MmprojGenOptions& opt);

}  // namespace tandem::vision
