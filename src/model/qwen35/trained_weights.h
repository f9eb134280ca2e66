// Trained qwen35 weights as the trainer (tools/train, Python) hands them to the C++ side: a
// directory with manifest.json (the shape, a name and description, and every tensor's GGUF name,
// ne and file) and one raw little-endian F32 file per tensor, ne[0]-contiguous (a torch
// [rows, cols] tensor written as it is). The GGUF is then written by the generator
// (qwen35_generator.h, GenOptions::values): one writer authors every key, the vocabulary, the
// tensor order and the type rules, for generated and trained files alike.
//
//   {"format": "tandem-qwen35-weights/1", "name": "...", "description": "...",
//    "shape": {"n_vocab": 151669, "n_embd": 256, "n_layer": 4, "n_ff": 768, "n_head": 2,
//              "n_head_kv": 1, "head_dim": 256, "n_rot": 64, "ssm_d_state": 128,
//              "ssm_n_group": 2, "ssm_dt_rank": 2, "ssm_conv_kernel": 4,
//              "full_attention_interval": 4, "rms_eps": 1e-6, "rope_freq_base": 1e7,
//              "context_length": 4096, "tied": true, "n_mtp": 1},
//    "tensors": [{"name": "token_embd.weight", "ne": [256, 151669], "file": "token_embd.weight.f32"}, ...]}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/qwen35/qwen35_generator.h"

namespace tandem {

class TrainedWeights {
 public:
  struct Tensor {
    std::vector<int64_t> ne;
    std::string file;  // relative to the directory
  };

  // Reads and validates dir/manifest.json (not the tensor files). Throws std::runtime_error
  // naming the file and the field that is wrong.
  static TrainedWeights read(const std::string& dir);

  const Qwen35Shape& shape() const { return shape_; }
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }

  // Throws std::runtime_error unless the manifest holds exactly the plan's tensors with the
  // plan's shapes: nothing missing, and nothing llama.cpp's qwen35 model would not create (it
  // refuses a file with extra tensors).
  void check_matches(const Qwen35Plan& plan) const;

  // The values of one planned tensor, read from its file (size checked against ne).
  std::vector<float> values(const Qwen35TensorPlan& t) const;

  // Generator options that write these weights: shape, name, description and values set; the
  // caller picks the file type, vocabulary and threads.
  GenOptions gen_options() const;

 private:
  std::string dir_, name_, description_;
  Qwen35Shape shape_;
  std::map<std::string, Tensor> tensors_;
};

}  // namespace tandem
