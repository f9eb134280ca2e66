// The Qwen3.5 vision encoder: a loaded mmproj GGUF plus the forward pass over one preprocessed
// image (spec vision.md §3). Read encode() top to bottom for the whole tower: patch embedding,
// learned position embedding, the ViT blocks (LayerNorm, fused QKV, 2-D RoPE, bidirectional
// attention, GELU MLP), the 2x2 merger. Every product runs through kernels::matmul on the tier
// picked at load, like the text model's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/weight_pack.h"
#include "runtime/cpu_features.h"
#include "runtime/thread_pool.h"
#include "vision/image_preprocess.h"
#include "vision/vision_hparams.h"
#include "vision/vision_weights.h"

namespace tandem::vision {

struct VisionLoadOptions {
  int n_threads = 0;                 // <= 0: one per physical core
  CpuTier tier = default_cpu_tier(); // lowered to the machine's
  bool pack_matrices = true;         // as LoadOptions::pack_matrices of the text model
};

// A named intermediate tensor of the encoder (llama.cpp's graph node names: patch_bias,
// inp_pos_emb, ln1-i, Qcur_rope-i, Kcur_rope-i, kqv_out-i, attn_out-i, ffn_inp-i, ffn_out-i,
// layer_out-i, norm_b-<depth>, ffn_gelu): rows of `cols` floats, `ld` apart, tokens in the 2x2
// merge order. For checking a block against golden nodes; costs nothing when unset.
struct EncoderNode {
  std::string_view name;
  const float* data;
  int64_t rows, cols, ld;
};
using NodeCallback = std::function<void(const EncoderNode&)>;

struct EncodeOptions {
  NodeCallback on_node;
  // The attention scores of one block of queries against every patch are kept in a buffer of at
  // most this many bytes per thread (the query block, at most 64 rows, shrinks to fit; at least
  // one query row).
  size_t attention_block_bytes = size_t{4} << 20;
};

// What one encode used.
struct EncodeStats {
  int nx = 0, ny = 0;      // merged grid: output tokens nx * ny
  int64_t n_patches = 0;
  double ms = 0;           // wall time of encode()
  double gflop = 0;        // multiply-adds x 2 of its products and attention (spec §4's count)
  size_t workspace_bytes = 0;  // the working memory this image needs (workspace_bytes_for)
  // Wall time by stage (ms): patch + position embedding, LayerNorms + residuals, QKV product,
  // RoPE, attention (both products, V transpose and softmax), output projection, MLP (up, GELU,
  // down), merger.
  double embed_ms = 0, norm_ms = 0, qkv_ms = 0, rope_ms = 0, attention_ms = 0, out_ms = 0, mlp_ms = 0, merger_ms = 0;
};

class VisionModel {
 public:
  // Opens, validates and binds an mmproj GGUF. Throws GgufError naming the file and the key or tensor.
  static std::unique_ptr<VisionModel> load(const std::string& path, const VisionLoadOptions& opt = {});
  ~VisionModel();

  const VisionHParams& hparams() const { return hp_; }
  const VisionWeights& weights() const { return w_; }
  const GgufFile& file() const { return *file_; }
  CpuTier cpu_tier() const;
  size_t packed_weight_bytes() const { return packed_.bytes(); }
  // llama.cpp refuses an mmproj whose output width differs from the text model's n_embd
  // (mtmd.cpp): throws GgufError naming both files.
  void check_text_model(int64_t text_n_embd, const std::string& text_path) const;
  void set_activation_mode(kernels::ActivationMode mode);

  // Encodes one preprocessed image: `pixels` is [height][width][3] interleaved RGB, normalised
  // (vision/image_preprocess.h); width and height are multiples of P*M. `out` receives nx*ny
  // rows of out_dim floats, in raster order over the merged grid (the rows the text model takes).
  // Throws std::invalid_argument on a bad size. Serialised: one image at a time per model.
  EncodeStats encode(const float* pixels, int width, int height, std::vector<float>& out, const EncodeOptions& opt = {});
  EncodeStats encode(const PreprocessedImage& img, std::vector<float>& out, const EncodeOptions& opt = {});
  // The preprocessing this tower expects (patch size, merge, the file's mean and std) under a
  // token budget.
  PreprocessParams preprocess_params(const ImageBudget& budget = {}) const;

  // The working memory encode() needs for an image of n_patches patches (what it allocates,
  // buffers reused across calls): stated so a server can budget it.
  size_t workspace_bytes_for(int64_t n_patches, size_t attention_block_bytes = size_t{4} << 20) const;
  // Bytes held now by the workspace (the largest image so far).
  size_t workspace_bytes() const;
  // The encoder's threads (the engine counts their CPU time: serve/meter/compute_meter.h).
  const ThreadPool& pool() const { return *pool_; }

 private:
  struct Workspace;
  VisionModel();
  void pack_for_matrix_path(bool pack);
  void linear(const WeightMatrix& W, const std::vector<float>& bias, const float* X, int64_t ldx, int64_t T, float* Y,
              int64_t ldy);
  void embed_patches(const float* pixels, int width, int height, int Wp, int Hp, float* x);
  void add_position_embedding(int Wp, int Hp, float* x);
  void block(int il, int Wp, int Hp, const EncodeOptions& opt, EncodeStats& st);
  void attention(int64_t n_pos, const EncodeOptions& opt);
  void merger(int64_t n_pos, std::vector<float>& out, const EncodeOptions& opt);
  template <typename F>
  void for_rows(int64_t n, F&& fn);

  std::unique_ptr<GgufFile> file_;
  VisionHParams hp_;
  VisionWeights w_;
  kernels::PackedWeights packed_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<kernels::KernelContext> ctx_;
  std::unique_ptr<Workspace> ws_;
  std::mutex mu_;
};

}  // namespace tandem::vision
