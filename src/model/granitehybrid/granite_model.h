// The granitehybrid model (IBM Granite-4.0-H, dense FFN; spec hybrids.md Part B): a loaded GGUF
// plus the forward pass over a batch of tokens of one sequence. The block loop, the layers' norms,
// attention and FFN are the layered hybrids' (model/layered_hybrid.h); this file holds what is
// Granite's own: its recurrent mixer, mamba2() (conv + SiLU, the selective scan with groups and
// the D skip, the gated grouped RMSNorm), its weights, and its scalings (embedding, residual,
// attention, logits). Attention has no positional encoding (NoPE).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/granitehybrid/granite_hparams.h"
#include "model/layered_hybrid.h"

namespace tandem {

// A Mamba2 layer: in-projection rows [z | x B C | dt], the conv kernel and bias (F32), the scan's
// per-head dt bias, A (= -exp(A_log)) and D, the grouped norm's weights, the out-projection.
struct GraniteMamba2Weights {
  WeightMatrix ssm_in, ssm_out;
  std::vector<float> conv, conv_bias, dt_bias, A, D, ssm_norm;
};

// ForwardOptions are honoured as by qwen35: cuts and rollback states (the scan stops there and
// copies its state), per_token_tail, and GdnAlgorithm for the scan of multi-token batches (Auto:
// chunked where kernels::ssm_scan_prefers_chunked says it pays).
class GraniteHybridModel final : public LayeredHybridModel {
 public:
  static std::unique_ptr<GraniteHybridModel> load(const std::string& path, const LoadOptions& opt);

  const GraniteHybridHParams& hparams() const { return hp_; }

 private:
  GraniteHybridModel() = default;
  ModelShape read_hparams(const GgufFile& f) override;
  void bind_weights(std::unique_ptr<GgufFile> file) override;
  const LayeredHParams& layered_hparams() const override { return hp_; }
  Scalings scalings() const override { return {hp_.embedding_scale, hp_.residual_scale, hp_.logit_scale}; }
  AttentionBlock attention_block(const LayeredLayerWeights& L) const override;
  void mixer(int il, int g, SequenceState& st, int64_t T, const ForwardOptions& opt) override;
  std::vector<WeightMatrix*> mixer_matrices(int g) override;
  void drop_mixer_weights() override;
  // The Mamba2 mixer of recurrent layer g over the T normed rows in cur_: m_ = its output.
  void mamba2(const GraniteMamba2Weights& W, int g, SequenceState& st, int64_t T, GdnAlgorithm algo);

  GraniteHybridHParams hp_;
  std::vector<GraniteMamba2Weights> mamba_;  // per recurrent layer
  std::vector<float> zxbcdt_, xbc_, y_;      // T x in_proj_rows, T x conv channels, T x d_inner
};

}  // namespace tandem
