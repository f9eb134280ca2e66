// The granitehybrid model (IBM Granite-4.0-H, dense FFN; spec hybrids.md Part B): a loaded GGUF
// plus the forward pass over a batch of tokens of one sequence. Read forward() top to bottom for
// the whole network; mamba2() is the recurrent mixer (conv + SiLU, the selective scan with groups
// and the D skip, the gated grouped RMSNorm), the other blocks are shared with LFM2
// (model/hybrid_blocks.h). Attention has no positional encoding (NoPE).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/granitehybrid/granite_hparams.h"
#include "model/hybrid_blocks.h"
#include "model/hybrid_model.h"
#include "model/state_stops.h"

namespace tandem {

struct GraniteHybridLayerWeights {
  bool recurrent = false;
  std::vector<float> attn_norm, ffn_norm;
  WeightMatrix ffn_gate, ffn_up, ffn_down;
  // Mamba2 layer: in-projection rows [z | x B C | dt], the conv kernel and bias (F32), the scan's
  // per-head dt bias, A (= -exp(A_log)) and D, the grouped norm's weights, the out-projection.
  WeightMatrix ssm_in, ssm_out;
  std::vector<float> conv, conv_bias, dt_bias, A, D, ssm_norm;
  // Attention layer.
  WeightMatrix attn_q, attn_k, attn_v, attn_output;
};

struct GraniteHybridWeights {
  WeightMatrix token_embd;
  std::vector<float> output_norm;
  WeightMatrix output;  // output.weight, or token_embd when tied
  bool tied = true;
  std::vector<GraniteHybridLayerWeights> layers;
  // Binds every tensor, checking shapes; refuses a tensor this model does not use.
  static GraniteHybridWeights load(const GgufFile& f, const GraniteHybridHParams& hp);
};

class GraniteHybridModel final : public HybridModel {
 public:
  static std::unique_ptr<GraniteHybridModel> load(const std::string& path, const LoadOptions& opt);
  ~GraniteHybridModel() override;

  const GraniteHybridHParams& hparams() const { return hp_; }
  CpuTier cpu_tier() const override { return blocks_->kc.tier; }
  void set_activation_mode(kernels::ActivationMode mode) override;
  kernels::ActivationMode activation_mode() const override { return blocks_->kc.activations; }

  // ForwardOptions are honoured as by qwen35: cuts and rollback states (the scan stops there and
  // copies its state), per_token_tail, and GdnAlgorithm for the scan of multi-token batches
  // (Auto: chunked where kernels::ssm_scan_prefers_chunked says it pays).
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out) override;

 private:
  GraniteHybridModel() = default;
  void bind_weights(std::unique_ptr<GgufFile> file) override;
  void drop_weights() override;
  void pack_for_matrix_path() override;
  // The Mamba2 mixer of recurrent layer g over the T normed rows in cur_: m_ = its output.
  void mamba2(const GraniteHybridLayerWeights& L, int g, SequenceState& st, int64_t T, GdnAlgorithm algo);

  GraniteHybridHParams hp_;
  GraniteHybridWeights w_;
  std::unique_ptr<HybridBlocks> blocks_;
  StateStops stops_;
  std::vector<float> x_, cur_, m_;             // residual stream, normed input, mixer/FFN output: T x n_embd
  std::vector<float> zxbcdt_, xbc_, y_;        // T x in_proj_rows, T x conv channels, T x d_inner
  std::vector<float> conv_state_;              // the new conv window, before it replaces the old one
};

}  // namespace tandem
