// The lfm2 hybrid model (LiquidAI LFM2, spec hybrids.md Part A): a loaded GGUF plus the forward
// pass over a batch of tokens of one sequence. The block loop, the layers' norms, attention and FFN
// are the layered hybrids' (model/layered_hybrid.h); this file holds what is LFM2's own: its
// recurrent mixer, short_conv() (the gated short convolution), its weights, and the attention's
// per-head q/k norms and NEOX RoPE.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/layered_hybrid.h"
#include "model/lfm2/lfm2_hparams.h"

namespace tandem {

// A short-conv layer: in_proj rows [B | C | x], the depthwise kernel (F32, ne {L, n_embd}), out_proj.
struct Lfm2ConvWeights {
  WeightMatrix in_proj, out_proj;
  std::vector<float> conv;
};

// ForwardOptions' cuts and rollback states are honoured (the conv windows at those positions);
// GdnAlgorithm and per_token_tail have nothing to choose here (the conv has one algorithm).
class Lfm2Model final : public LayeredHybridModel {
 public:
  static std::unique_ptr<Lfm2Model> load(const std::string& path, const LoadOptions& opt);

  const Lfm2HParams& hparams() const { return hp_; }

 private:
  Lfm2Model() = default;
  ModelShape read_hparams(const GgufFile& f) override;
  void bind_weights(std::unique_ptr<GgufFile> file) override;
  const LayeredHParams& layered_hparams() const override { return hp_; }
  AttentionBlock attention_block(const LayeredLayerWeights& L) const override;
  void mixer(int il, int g, SequenceState& st, int64_t T, const ForwardOptions& opt) override;
  std::vector<WeightMatrix*> mixer_matrices(int g) override;
  void drop_mixer_weights() override;
  // The gated short convolution of recurrent layer g over the T normed rows in cur_: m_ = its output.
  void short_conv(const Lfm2ConvWeights& W, int g, SequenceState& st, int64_t T);

  Lfm2HParams hp_;
  std::vector<Lfm2ConvWeights> conv_;      // per recurrent layer
  std::vector<float> bcx_, u_, conv_out_;  // short conv: T x 3·n_embd, T x n_embd, T x n_embd
};

}  // namespace tandem
