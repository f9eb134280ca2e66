// The model seam: what the serving core (serve/), the speculator, checkpoints, the prompt cache and
// the tools run on, for any hybrid architecture — recurrent layers whose state is a few planes per
// sequence, attention layers with a KV cache, and a forward pass over a batch of one sequence.
//
// One subclass per architecture, each in its own folder (model/qwen35, model/lfm2,
// model/granitehybrid), each readable top to bottom: load, then forward() layer by layer. This
// base owns what every architecture shares and what the server's lifecycle acts on: the mapped
// file, its fingerprint, the packed copies of the matrix path, the thread pool and its governor,
// and unloading/reloading the weights between bursts. model/architectures.h picks the subclass
// from general.architecture (the one place that knows them all).
//
// Capabilities beyond a text forward pass are virtual with a refusing default, so a caller asks
// instead of assuming: image rows (qwen35's M-RoPE vision path), replay-logged verification passes
// (qwen35's Gated DeltaNet log), the MTP draft head.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "gguf/gguf_file.h"
#include "model/forward_pass.h"
#include "model/model_shape.h"
#include "model/sequence_state.h"
#include "runtime/activation_mode.h"
#include "runtime/cpu_features.h"
#include "runtime/resource_governor.h"
#include "runtime/thread_pool.h"

namespace tandem {

// The kernels' types stay behind this seam: the serving core sees the model, not how it multiplies.
namespace kernels {
struct WeightMatrix;
class PackedWeights;
}  // namespace kernels

class Qwen35Model;

class HybridModel {
 public:
  virtual ~HybridModel();
  HybridModel(const HybridModel&) = delete;
  HybridModel& operator=(const HybridModel&) = delete;

  const ModelShape& shape() const { return shape_; }
  const std::string& architecture() const { return shape_.architecture; }
  const GgufFile& file() const { return *file_; }
  ThreadPool& pool() { return *pool_; }
  // Gives the pool's resources back between bursts (idle release, 3 s by default).
  CpuResourceGovernor& governor() { return *governor_; }
  // The kernel tier picked at load (LoadOptions::tier, lowered to the machine's).
  virtual CpuTier cpu_tier() const = 0;
  // Bytes of the weights' packed copies (0 on the scalar tier, and where the tier packs none of
  // the file's types: kernels::plan_matrix).
  size_t packed_weight_bytes() const;
  // Converted (default): activations meet quantized/F16 weights converted as ggml-cpu does, on
  // the integer kernels (llama.cpp's numbers). Exact: dequantized weights times the float
  // activations (slower; what the weights alone do to the logits, for accuracy comparisons).
  virtual void set_activation_mode(ActivationMode mode) = 0;
  virtual ActivationMode activation_mode() const = 0;

  // A sequence of this model with room for n_ctx cache rows (zero state, position 0).
  std::unique_ptr<SequenceState> new_sequence(int64_t n_ctx) const {
    return std::make_unique<SequenceState>(shape_.sequence, n_ctx);
  }

  // Runs tokens at cache indices state.n_past() ... and advances the state, handing back what
  // ForwardOptions asks for (logits, checkpoints at cuts, rollback states). Reuses out's buffers.
  // Throws std::invalid_argument / std::length_error on bad tokens or overflow of the context,
  // leaving the state untouched.
  virtual void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
                       ForwardOutput& out) = 0;

  // Image rows as layer-0 input (qwen35 with its vision encoder). Default: refused.
  virtual bool accepts_image_rows() const { return false; }
  virtual void forward_image(SequenceState& state, const EmbeddingRows& rows, const ForwardOptions& opt,
                             ForwardOutput& out);
  // Verification passes with a replay log instead of state copies (forward_logged + roll_back,
  // model/forward_pass.h). Default: refused; the serving core then verifies in copy mode.
  virtual bool keeps_replay_log() const { return false; }
  virtual void forward_logged(SequenceState& state, std::span<const int32_t> tokens, const LoggedPassOptions& opt,
                              ForwardOutput& out);
  virtual void roll_back(SequenceState& state, const ForwardOutput& out, int64_t pos);
  // The model whose MTP head drafts (serve/spec/mtp_drafter.h), or null: today only qwen35 files carry
  // one (spec qwen35.md §7; neither LFM2 nor Granite-4.0-H has a draft head).
  virtual Qwen35Model* mtp_model() { return nullptr; }
  virtual bool has_mtp() const { return false; }  // mtp_model() is not null (kept while unloaded)

  // Unloading between bursts (the server's --unload-idle-s): unload_weights() unmaps the file
  // and frees the packed copies and the pass workspace; the shape, the thread pool and the
  // governor stay, and so do sequences made by new_sequence (their owners free them).
  // reload_weights() maps the file again, refuses it (GgufError, the model stays unloaded) when
  // it is no longer the file that was loaded (model_fingerprint), and binds and packs as load()
  // did. A pass on an unloaded model throws std::logic_error. Not during a pass (both take the
  // pass lock).
  struct ReloadTimes {
    double map_ms = 0;   // open, parse and check the file, bind the tensors
    double pack_ms = 0;  // the packed copies of the matrix path
  };
  void unload_weights();
  ReloadTimes reload_weights();
  bool weights_loaded() const { return file_ != nullptr; }
  // model_fingerprint() of the file, taken at load: what the state files record.
  uint64_t fingerprint() const { return fingerprint_; }
  const std::string& path() const { return path_; }

 protected:
  HybridModel();
  // load()'s common part, in the order every architecture needs: the file's fingerprint (before
  // packing gives sampled pages back), bind_weights, the packed copies, then the pool.
  void open_common(const std::string& path, std::unique_ptr<GgufFile> file, const LoadOptions& opt);
  // The architecture binds its tensors to the mapped file (and keeps the file in file_).
  virtual void bind_weights(std::unique_ptr<GgufFile> file) = 0;
  // Forgets the bound tensors and the pass workspace (file_ and packed_ go in unload_weights).
  virtual void drop_weights() = 0;
  // Gives every matrix the tier multiplies packed its packed copy (kernels::plan_matrix).
  virtual void pack_for_matrix_path() = 0;
  void require_weights(const char* what) const;
  // A text batch a forward pass may take: not empty, within the sequence's context, every id in
  // the vocabulary; throws what is wrong, naming the index and the bounds (the same for every
  // architecture, so a client gets the same error whatever model it runs).
  void check_text_batch(const SequenceState& st, std::span<const int32_t> tokens) const;
  // The logits a pass of T tokens at pos0 hands back (mode: ForwardOptions::logits): sizes
  // out.logits and sets out.logit_positions for them, and returns the first of the T rows they are
  // of (the rest follow it), or -1 for none (out.logits cleared).
  int64_t logit_rows(LogitsMode mode, int64_t pos0, int64_t T, ForwardOutput& out) const;
  // Packs W when the tier's plan for its type says so; the ggml rows' pages are given back to
  // the file unless keep_rows (a tied head whose rows are also the embedding table).
  void pack_matrix(kernels::WeightMatrix& W, CpuTier tier, bool keep_rows);

  ModelShape shape_;
  std::unique_ptr<GgufFile> file_;  // the mapping (null while unloaded)
  std::string path_;
  uint64_t fingerprint_ = 0;
  bool pack_matrices_ = true;
  std::unique_ptr<kernels::PackedWeights> packed_;  // never null
  std::mutex mu_;  // one pass at a time: passes share the model's workspace and pool
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuResourceGovernor> governor_;  // declared after pool_: destroyed first
};

}  // namespace tandem
