// The architectures whose layers run one after the other over the whole batch, each a recurrent
// mixer or grouped-query attention followed by a SwiGLU FFN (LFM2, Granite-4.0-H; spec hybrids.md
// Parts A, B): the block loop, the weights every layer has, the state stops of a pass and the
// causal conv's window handling are the same logic for all of them and live here. An
// architecture (model/lfm2, model/granitehybrid) adds only what is its own: its hyper-parameters,
// its recurrent mixer and its weights, the attention's settings and the scalings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/hybrid_blocks.h"
#include "model/hybrid_model.h"
#include "model/layered_hparams.h"
#include "model/state_stops.h"
#include "model/tensor_binder.h"

namespace tandem {

// What every layer has: its two norms and FFN, and on an attention layer the projections (and the
// per-head q/k norms where the architecture has them).
struct LayeredLayerWeights {
  bool recurrent = false;
  std::vector<float> attn_norm, ffn_norm;
  WeightMatrix ffn_gate, ffn_up, ffn_down;
  WeightMatrix attn_q, attn_k, attn_v, attn_output;
  std::vector<float> attn_q_norm, attn_k_norm;
};

struct LayeredWeights {
  WeightMatrix token_embd;
  std::vector<float> output_norm;
  WeightMatrix output;  // the LM head: output.weight, or token_embd when tied
  bool tied = true;
  std::vector<LayeredLayerWeights> layers;
};

class LayeredHybridModel : public HybridModel {
 public:
  ~LayeredHybridModel() override;
  CpuTier cpu_tier() const override { return blocks_->kc.tier; }
  void set_activation_mode(ActivationMode mode) override;
  ActivationMode activation_mode() const override { return blocks_->kc.activations; }

  // Per layer: r = h + residual · mixer(norm(h)); h = r + residual · ffn(norm(r)); then the final
  // norm, the LM head and logits ÷ logit scale. ForwardOptions' cuts and rollback states are
  // honoured through the state stops (each recurrent layer stops at them and copies its state).
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out) override;

 protected:
  struct Scalings {
    float embedding = 1.0f;  // on the embedding rows
    float residual = 1.0f;   // on each block's output before it joins the residual stream
    float logit = 1.0f;      // logits are divided by it
  };

  LayeredHybridModel() = default;
  // load(): maps the file, reads the hparams (read_hparams), makes the kernel context on opt.tier
  // (fixed for the model's life), then HybridModel::open_common (binds, packs, makes the pool).
  void open_layered(const std::string& path, const LoadOptions& opt);
  // bind_weights(): binds the tensors every layer has, layer by layer, calling mixer(binder,
  // "blk.<il>.") for each recurrent layer's own in its turn (a missing tensor is named in file
  // order), then refuses a tensor nothing took (model: the name in that error). output_norm: the
  // final norm's tensor name; qk_norms: attention layers have per-head q/k norms.
  void bind_file(std::unique_ptr<GgufFile> file, const std::string& output_norm, bool qk_norms,
                 const std::string& model, const std::function<void(const TensorBinder&, const std::string&)>& mixer);

  // What an architecture supplies.
  // Reads its hyper-parameters from the file (keeping them) and returns the shape they give.
  virtual ModelShape read_hparams(const GgufFile& f) = 0;
  virtual const LayeredHParams& layered_hparams() const = 0;
  virtual Scalings scalings() const { return {}; }
  virtual AttentionBlock attention_block(const LayeredLayerWeights& L) const = 0;
  // Recurrent layer il, the g-th recurrent one, over the T normed rows in cur_: m_ = its output.
  virtual void mixer(int il, int g, SequenceState& st, int64_t T, const ForwardOptions& opt) = 0;
  // The recurrent layer g's matrices (packed with the layer's others) and its weights' release.
  virtual std::vector<WeightMatrix*> mixer_matrices(int g) = 0;
  virtual void drop_mixer_weights() = 0;

  // A causal depthwise conv (kernels::ssm_conv) of recurrent layer g over x (T rows of `channels`,
  // row stride ldx) into y: first the windows the pass hands back at its stops, then the conv,
  // then the layer's window moves on to the one after the batch.
  void conv_with_stops(int g, SequenceState& st, const float* x, int64_t ldx, int64_t T, int64_t channels, int K,
                       const float* w, const float* bias, bool silu, float* y, int64_t ldy);

  LayeredWeights w_;
  std::unique_ptr<HybridBlocks> blocks_;
  StateStops stops_;
  std::vector<float> x_, cur_, m_;  // residual stream, normed input, mixer/FFN output: T x n_embd

 private:
  void drop_weights() final;
  void pack_for_matrix_path() final;

  std::vector<float> conv_state_;  // the new conv window, before it replaces the old one
};

}  // namespace tandem
