// The lfm2 hybrid model (LiquidAI LFM2, spec hybrids.md Part A): a loaded GGUF plus the forward
// pass over a batch of tokens of one sequence. Read forward() top to bottom for the whole network;
// short_conv() is the recurrent mixer (the gated short convolution), the other blocks are shared
// with Granite-4.0-H (model/hybrid_blocks.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/hybrid_blocks.h"
#include "model/hybrid_model.h"
#include "model/lfm2/lfm2_hparams.h"
#include "model/state_stops.h"

namespace tandem {

struct Lfm2LayerWeights {
  bool recurrent = false;
  std::vector<float> attn_norm, ffn_norm;  // operator_norm, ffn_norm
  WeightMatrix ffn_gate, ffn_up, ffn_down;
  // Short-conv layer: in_proj rows [B | C | x], the depthwise kernel (F32, ne {L, n_embd}), out_proj.
  WeightMatrix in_proj, out_proj;
  std::vector<float> conv;
  // Attention layer.
  WeightMatrix attn_q, attn_k, attn_v, attn_output;
  std::vector<float> attn_q_norm, attn_k_norm;
};

struct Lfm2Weights {
  WeightMatrix token_embd;
  std::vector<float> output_norm;  // stored as token_embd_norm (spec A4)
  WeightMatrix output;             // the LM head: output.weight, or token_embd when tied
  bool tied = true;
  std::vector<Lfm2LayerWeights> layers;
  // Binds every tensor, checking shapes; refuses a tensor this model does not use.
  static Lfm2Weights load(const GgufFile& f, const Lfm2HParams& hp);
};

class Lfm2Model final : public HybridModel {
 public:
  static std::unique_ptr<Lfm2Model> load(const std::string& path, const LoadOptions& opt);
  ~Lfm2Model() override;

  const Lfm2HParams& hparams() const { return hp_; }
  CpuTier cpu_tier() const override { return blocks_->kc.tier; }
  void set_activation_mode(kernels::ActivationMode mode) override;
  kernels::ActivationMode activation_mode() const override { return blocks_->kc.activations; }

  // ForwardOptions' cuts and rollback states are honoured (the conv windows at those positions);
  // GdnAlgorithm and per_token_tail have nothing to choose here (the conv has one algorithm).
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out) override;

 private:
  Lfm2Model() = default;
  void bind_weights(std::unique_ptr<GgufFile> file) override;
  void drop_weights() override;
  void pack_for_matrix_path() override;
  // The gated short convolution of recurrent layer g over the T normed rows in cur_: m_ = its output.
  void short_conv(const Lfm2LayerWeights& L, int g, SequenceState& st, int64_t T);

  Lfm2HParams hp_;
  Lfm2Weights w_;
  std::unique_ptr<HybridBlocks> blocks_;
  StateStops stops_;
  std::vector<float> x_, cur_, m_;         // residual stream, normed input, mixer/FFN output: T x n_embd
  std::vector<float> bcx_, u_, conv_out_;  // short conv: T x 3·n_embd, T x n_embd, T x n_embd
  std::vector<float> conv_state_;          // the new conv window, before it replaces the old one
};

}  // namespace tandem
