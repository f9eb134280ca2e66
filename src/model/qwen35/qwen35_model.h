// The qwen35 hybrid model: a loaded GGUF plus the forward pass over a batch of
// tokens — or of an image's embedding rows (forward_image) — of one sequence. Read
// forward() and run_pass() top to bottom for the whole network (spec §4); each layer
// kind is one function below it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/delta_rule/delta_rule.h"
#include "kernels/matmul/weight_pack.h"
#include "model/forward_pass.h"
#include "model/hybrid_model.h"
#include "model/qwen35/qwen35_hparams.h"
#include "model/qwen35/qwen35_weights.h"
#include "model/sequence_state.h"
#include "runtime/cpu_features.h"
#include "runtime/resource_governor.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace tandem {

// The MTP (NextN) draft head's per-sequence state: the KV cache of its one attention
// layer. Position p holds the row for (token x_p, trunk hidden state at p-1).
struct MtpState {
  MtpState(const Qwen35HParams& hp, int64_t n_ctx);
  int64_t n_ctx;
  int64_t n_past = 0;
  std::vector<float> k, v;  // n_ctx rows of kv_dim
  void truncate(int64_t pos);
  size_t bytes() const { return (k.size() + v.size()) * sizeof(float); }
};

class Qwen35Model final : public HybridModel {
 public:
  // Opens, validates and binds a qwen35 GGUF. Throws GgufError with a clear message.
  static std::unique_ptr<Qwen35Model> load(const std::string& path, const LoadOptions& opt);
  // The default tier (default_cpu_tier()); n_threads <= 0: one compute thread per physical core.
  static std::unique_ptr<Qwen35Model> load(const std::string& path, int n_threads = 0);
  ~Qwen35Model();

  const Qwen35HParams& hparams() const { return hp_; }
  const Qwen35Weights& weights() const { return w_; }
  CpuTier cpu_tier() const override;
  // On the Amx tier, packed products of 1..4 tokens run on the vector units (default, faster)
  // or, with false, on the tiles; the logits are the same bits (benchmarks compare the two).
  void set_packed_few_tokens_on_vector_units(bool on);
  void set_activation_mode(ActivationMode mode) override;
  ActivationMode activation_mode() const override;

  bool has_mtp() const override { return has_mtp_; }
  Qwen35Model* mtp_model() override { return has_mtp_ ? this : nullptr; }
  std::unique_ptr<MtpState> new_mtp_state(int64_t n_ctx) const;

  // The MTP head (spec §7) over T rows at positions st.n_past()...: row t combines
  // token tokens[t] with hidden[t], the trunk's final normed hidden state of the
  // previous position (or the head's own hidden output when chaining drafts).
  // out.hidden receives the head's normed output rows (T x n_embd, the next step's
  // hidden input); out.logits the requested rows through `head` (default: the shared
  // LM head; a trimmed draft head is a matrix with fewer rows). With LogitsMode::None the
  // rows only enter the head's KV cache (catching up with the trunk): the same cache rows, bit
  // for bit, without the attention, the FFN or the norm after them; out.hidden is left empty.
  void mtp_forward(MtpState& st, std::span<const int32_t> tokens, const float* hidden, LogitsMode logits,
                   ForwardOutput& out, const WeightMatrix* head = nullptr);

  // Runs tokens at cache indices state.n_past() ... (rotary positions: SequenceState::position)
  // and advances the state. Reuses out's buffers. Throws std::invalid_argument / std::length_error
  // on bad tokens or overflow of the context, std::logic_error while the state holds part of an
  // image (forward_image), leaving the state untouched.
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out) override;
  // The same pass over image rows: rows [first_row, first_row + n_rows) of an nx x ny image at positions
  // state.n_past()..., rotated by their M-RoPE positions (SequenceState::position: (p0, p0 + row,
  // p0 + col)); GDN layers see them as ordinary tokens in raster order. The options mean what they
  // mean for forward() (cuts inside an image leave a state the image's remaining rows continue;
  // logits, usually LogitsMode::None, are the rows' own). Text tokens after the image (forward())
  // continue at p0 + max(nx, ny). Throws, leaving the state untouched: std::invalid_argument on a
  // bad grid or row range, std::logic_error where the rows do not start a new image or continue the
  // open one (first_row, nx, ny), std::length_error where the image does not fit the context.
  bool accepts_image_rows() const override { return true; }
  void forward_image(SequenceState& state, const EmbeddingRows& rows, const ForwardOptions& opt,
                     ForwardOutput& out) override;
  // The same pass with a replay log instead of state copies (see above); validates as forward().
  bool keeps_replay_log() const override { return true; }
  void forward_logged(SequenceState& state, std::span<const int32_t> tokens, const LoggedPassOptions& opt,
                      ForwardOutput& out) override;

  // After a forward_logged pass `out` on `state` (and nothing else on it since): puts
  // the state back to position pos in [out.replay.pos0, state.n_past()] — KV truncated, the
  // recurrent state recomputed from the log (pos - pos0 per-token updates per head). Throws
  // std::logic_error when the log does not belong to this state as it is now.
  void roll_back(SequenceState& state, const ForwardOutput& out, int64_t pos) override;

 private:
  struct Workspace;
  struct PassShape;  // one pass, validated: what the entry points hand to the layers
  // What enters layer 0: token ids (looked up in the embedding table) or embedding rows (as they are).
  struct PassInput {
    std::span<const int32_t> tokens;
    const float* rows = nullptr;  // T x n_embd, when not tokens
    int64_t T = 0;
  };
  Qwen35Model() = default;
  void validate_batch(const SequenceState& st, std::span<const int32_t> tokens) const;
  void validate_rows(const SequenceState& st, const EmbeddingRows& rows) const;
  // ForwardOptions of a pass of T inputs at st.n_past() into the workspace's PassShape (throws on bad options).
  PassShape& plan_pass(const SequenceState& st, int64_t T, const ForwardOptions& opt);
  void run_pass(SequenceState& st, const PassInput& in, const PassShape& shape, ForwardOutput& out);
  // The rotary cos/sin rows (T x n_rot, the workspace's) of cache indices pos0 .. pos0 + T - 1: their
  // M-RoPE positions in st (SequenceState::position), or without a sequence (the MTP head's own
  // cache) the indices themselves. Built once per pass, read by every attention layer.
  const float* rope_rows(const SequenceState* st, int64_t pos0, int64_t T);
  void gdn_layer(int il, int g, SequenceState& st, int64_t T, const PassShape& shape, ForwardOutput& out);
  struct GdnRows;  // where a GDN layer's per-token rows live (the workspace or the replay log)
  GdnRows gdn_rows(int g, int64_t T, const PassShape& shape, ForwardOutput& out);
  void gdn_conv(const Qwen35LayerWeights& L, int g, SequenceState& st, int64_t T, const PassShape& shape,
                const GdnRows& r, ForwardOutput& out);
  void gdn_delta_rule(const Qwen35LayerWeights& L, int g, SequenceState& st, int64_t T, const PassShape& shape,
                      const GdnRows& r, ForwardOutput& out);
  // Gated attention over the cache rows [0, pos0 + T); appends T rows at pos0, rotated by rope_cs
  // (T rows of n_rot: rope_rows()).
  void attention_layer(const Qwen35LayerWeights& L, float* k_cache, float* v_cache, int64_t pos0, int64_t T,
                       const float* rope_cs);
  // Only the T rows' K/V into the cache (the MTP head catching up: LogitsMode::None), and the
  // part of attention_layer that writes them (k in ws.k, v in ws.v, projected).
  void attention_kv_only(const Qwen35LayerWeights& L, float* k_cache, float* v_cache, int64_t pos0, int64_t T,
                         const float* rope_cs);
  void store_kv_rows(const Qwen35LayerWeights& L, float* k_cache, float* v_cache, int64_t pos0, int64_t T,
                     const float* rope_cs);
  void ffn(const Qwen35LayerWeights& L, int64_t T);
  // The residual stream ws.x: x += m (when given), then out = rms_norm(x) * w, token by token.
  void residual_norm(const float* m, const std::vector<float>& w, float* out, int64_t T);
  // The delta rule's view of T tokens' conv output rows (q | k | v, conv_dim apart), decays and
  // betas: the pass and roll_back() feed it the same way.
  kernels::DeltaRuleInput delta_rule_input(const float* qkv, const float* g, const float* beta, float* out,
                                           int64_t T) const;
  // Floats a logged pass (forward_logged) keeps per GDN layer for a batch of T tokens (ReplayLog::inputs).
  int64_t replay_floats_per_layer(int64_t T) const;
  // kernels::matmul on the workspace's context, honouring ForwardOptions::column_shared.
  void project(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy);
  void project_many(std::span<const kernels::MatmulTarget> targets, const float* X, int64_t ldx, int64_t T);

  // Every matrix whose plan on the model's tier (kernels::plan_matrix) is WeightLayout::Packed gets
  // its 16-row packed copy (kernels/weight_pack.h), multiplied on the tiles or the vector units.
  void pack_for_matrix_path() override;
  // bind_weights() makes w_ point into the file's mapping; drop_weights() forgets them and the
  // pass buffers (HybridModel::unload_weights).
  void bind_weights(std::unique_ptr<GgufFile> file) override;
  void drop_weights() override;
  bool has_mtp_ = false;
  Qwen35HParams hp_;
  Qwen35Weights w_;
  std::unique_ptr<Workspace> ws_;
};

}  // namespace tandem
