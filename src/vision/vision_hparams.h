// Hyper-parameters of a Qwen3.5 vision tower, read from an mmproj GGUF (spec vision.md §1.1): the
// keys llama.cpp's clip loader reads for projector `qwen3vl_merger`, with its defaults and checks.
// Every shape the encoder uses comes from here; the tensors are checked against these numbers.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"

namespace tandem::vision {

struct VisionHParams {
  int n_embd = 0;      // C, clip.vision.embedding_length
  int n_head = 0;      // H
  int head_dim = 0;    // d = C / H (or clip.vision.attention.head_dim)
  int n_ff = 0;        // F
  int n_layer = 0;     // clip.vision.block_count
  int patch_size = 0;  // P
  int merge = 2;       // M, clip.vision.spatial_merge_size
  int image_size = 0;  // clip.vision.image_size (sanity checks only, as llama.cpp)
  int pos_side = 0;    // G: the learned position table is G x G (from v.position_embd's rows)
  int64_t out_dim = 0; // D, the width of mm.2 = the text model's n_embd
  float eps = 1e-6f;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  bool use_gelu = true;  // tanh GELU in the blocks (clip.use_gelu); else GELU_QUICK, unsupported here

  int64_t patch_dim() const { return 3LL * patch_size * patch_size; }  // one patch's pixels (c, ky, kx)
  int64_t merged_dim() const { return static_cast<int64_t>(merge) * merge * n_embd; }
  // Pixels per output token side: P * M (32 for Qwen3.5).
  int align() const { return patch_size * merge; }

  // Reads and validates; throws GgufError naming the file and the key.
  static VisionHParams from_gguf(const GgufFile& f);
  std::string summary() const;
};

}  // namespace tandem::vision
