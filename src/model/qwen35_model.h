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
#include "kernels/delta_rule.h"
#include "kernels/weight_pack.h"
#include "model/qwen35_hparams.h"
#include "model/qwen35_weights.h"
#include "model/sequence_state.h"
#include "runtime/cpu_features.h"
#include "runtime/scratch.h"
#include "runtime/resource_governor.h"
#include "runtime/thread_pool.h"

namespace tandem {

enum class LogitsMode { None, Last, All };

// Which Gated DeltaNet algorithm runs for multi-token batches. Auto: chunked where the CPU
// tier has a fast chunked body (kernels::delta_rule_prefers_chunked: AVX-512), per token
// otherwise — on AVX2 the per-token body beats the scalar chunked reference ~29× (bench/RESULTS.md).
// (Single tokens always run per token.)
enum class GdnAlgorithm { Auto, Recurrent, Chunked };

// Two kinds of pass, so that no option can contradict the kind:
//   forward() (and forward_image(), the same pass over an image's embedding rows instead of
//     token ids): the pass hands back copies of the states asked for — checkpoints at cut positions,
//     snapshots after each of its last K tokens (the rollback states a speculating slot retains,
//     or a verification pass in copy mode: a rollback is one copy back). ForwardOptions.
//   forward_logged(): a verification pass that copies nothing per token. It keeps the recurrent
//     state from before the batch and the batch's own conv and delta-rule inputs
//     (ForwardOutput::replay); a rollback (Qwen35Model::roll_back) recomputes the state at the
//     wanted position from them, running the same per-token kernel on the same inputs, so the
//     state is bit for bit the one a snapshot would have held. The pass then writes one state
//     instead of k; the cost moves to the rejections (j+1 token updates instead of a copy). Such a
//     pass runs every token per token, has no cuts and logs all of its tokens by construction:
//     LoggedPassOptions has nothing to set there.
// How forward() splits its tokens between the chunked and per-token delta rule is rollback-aware
// prefill (model/rollback_aware_prefill.h), decided once per pass.
struct ForwardOptions {
  LogitsMode logits = LogitsMode::Last;
  bool hidden = false;  // also return the final normed hidden state of every token (the MTP input)
  GdnAlgorithm gdn = GdnAlgorithm::Auto;
  // Absolute positions P with n_past < P <= n_past + T: return the recurrent state after
  // consuming tokens [0, P) (a checkpoint taken inside this pass, at no extra cost).
  std::vector<int64_t> cuts;
  // K > 0: return the states after each of the last K tokens (speculative rollback). With
  // the chunked algorithm only the last K-1 tokens run per token.
  int rollback_states = 0;
  // With the chunked algorithm, the batch's last max(per_token_tail, K - 1) tokens run the
  // delta rule per token. A server's prompt passes all take the same tail (its draft length,
  // serve::ModelBackend), so that a pass that also keeps rollback states computes the same bits
  // as one that does not: speculation on and off then see the same prompt states.
  int64_t per_token_tail = 0;
  // false: slot 0 (the state after the last token, which is the live state the sequence
  // holds anyway) is not copied; it is returned with pos = -1. A verification pass only
  // ever rolls back to slots 1..k, so it saves one full state write per pass.
  bool rollback_live = true;
  // Multi-column products share each weight read across the T columns (kernels/matmul.h).
  // false: every column runs as its own one-column product (a switch for the verification
  // benchmark, docs/speculation.md; the numbers are the same).
  bool column_shared = true;
};

// Embedding rows that enter the network as layer-0 input as they are (no lookup, no scaling):
// an image's rows from the vision encoder (spec vision.md §5.4), raster order over its ny × nx grid
// (row r is grid row r / nx, column r % nx). One image may be fed in pieces, each a forward_image
// call (llama.cpp decodes them in n_batch pieces, §5.5): first_row = 0 starts the image at the
// state's n_past(), first_row = k continues the image the state holds k rows of.
struct EmbeddingRows {
  const float* rows = nullptr;  // n_rows x n_embd floats
  int64_t n_rows = 0;
  int nx = 0, ny = 0;           // the image's grid: nx * ny rows in all
  int64_t first_row = 0;        // the first row's index in the image
};

// A verification pass with a replay log (forward_logged).
struct LoggedPassOptions {
  LogitsMode logits = LogitsMode::All;
  bool hidden = false;
  bool column_shared = true;  // as ForwardOptions::column_shared
};

// What a logged pass keeps (forward_logged): enough to rebuild the recurrent state at any
// position pos0 .. pos0 + T of the batch.
struct ReplayLog {
  const SequenceState* seq = nullptr;  // the sequence the pass ran on
  uint64_t seq_version = 0;            // its version right after the pass (stale once it moves on)
  int64_t pos0 = 0, T = 0;             // the batch
  StateBuffer before;                  // the recurrent state at pos0 (the sequence's own buffer)
  // Per GDN layer, for the batch's T tokens: the conv input rows (T x conv_dim), the
  // normalised q|k|v rows the delta rule read (T x conv_dim), its decay and beta (T x H_v each).
  std::vector<float> inputs;
  bool valid_for(const SequenceState& st) const;
};

struct ForwardOutput {
  std::vector<float> logits;            // rows x n_vocab
  std::vector<int64_t> logit_positions; // absolute position of each logits row
  std::vector<float> hidden;            // T x n_embd when requested
  std::vector<RecurrentCheckpoint> cut_states;       // one per cut, in order
  std::vector<RecurrentCheckpoint> rollback_states;  // slot s = after token T-1-s; min(K, T) slots
  // State buffers of earlier passes kept for later ones: passes whose K or number of cuts
  // varies (drafts cut short by the probability floor) allocate nothing after the first.
  std::vector<RecurrentCheckpoint> spare_states;
  ReplayLog replay;  // forward_logged passes
  int64_t n_vocab = 0;

  const float* logits_row(size_t i) const { return logits.data() + i * static_cast<size_t>(n_vocab); }
  // Bytes held (capacities: what stays allocated between passes).
  size_t bytes() const;
};

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

// How a model is loaded.
struct LoadOptions {
  int n_threads = 0;  // compute threads; <= 0: one per physical core
  // The CPU tier of every kernel this model runs, picked once, here (lowered to what the machine
  // has): which matrices are packed at load and every product's path follow from it
  // (kernels::plan_matrix). Tools set it from --cpu-path, tests from the tier they test.
  CpuTier tier = default_cpu_tier();
  // false: no matrix gets its packed copy, every product runs on the ggml rows of this tier (a
  // test compares the packed paths with the row kernels on one tier).
  bool pack_matrices = true;
};

class Qwen35Model {
 public:
  // Opens, validates and binds a qwen35 GGUF. Throws GgufError with a clear message.
  static std::unique_ptr<Qwen35Model> load(const std::string& path, const LoadOptions& opt);
  // The default tier (default_cpu_tier()); n_threads <= 0: one compute thread per physical core.
  static std::unique_ptr<Qwen35Model> load(const std::string& path, int n_threads = 0);
  ~Qwen35Model();

  const Qwen35HParams& hparams() const { return hp_; }
  const Qwen35Weights& weights() const { return w_; }
  const GgufFile& file() const { return *file_; }
  ThreadPool& pool() { return *pool_; }
  // The kernel tier picked at load (LoadOptions::tier, lowered to the machine's).
  CpuTier cpu_tier() const;
  // Bytes of the weights' packed copies (0 on the scalar tier, and where the tier packs none of
  // the file's types: kernels::plan_matrix).
  size_t packed_weight_bytes() const { return packed_.bytes(); }
  // On the Amx tier, packed products of 1..4 tokens run on the vector units (default, faster)
  // or, with false, on the tiles; the logits are the same bits (benchmarks compare the two).
  void set_packed_few_tokens_on_vector_units(bool on);
  // Converted (default): activations meet quantized/F16 weights converted as ggml-cpu does, on
  // the integer kernels (llama.cpp's numbers). Exact: dequantized weights times the float
  // activations (slower; what the weights alone do to the logits, for accuracy comparisons).
  void set_activation_mode(kernels::ActivationMode mode);
  kernels::ActivationMode activation_mode() const;
  // Gives the pool's resources back between bursts (idle release, 3 s by default).
  CpuResourceGovernor& governor() { return *governor_; }

  // Unloading between bursts (the server's --unload-idle-s): unload_weights() unmaps the file
  // and frees the packed copies and the pass workspace; the shapes, the thread pool and the
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

  std::unique_ptr<SequenceState> new_sequence(int64_t n_ctx) const;
  bool has_mtp() const { return has_mtp_; }  // kept while unloaded
  std::unique_ptr<MtpState> new_mtp_state(int64_t n_ctx) const;

  // The MTP head (spec §7) over T rows at positions st.n_past()...: row t combines
  // token tokens[t] with hidden[t], the trunk's final normed hidden state of the
  // previous position (or the head's own hidden output when chaining drafts).
  // out.hidden receives the head's normed output rows (T x n_embd, the next step's
  // hidden input); out.logits the requested rows through `head` (default: the shared
  // LM head; a trimmed draft head is a matrix with fewer rows).
  void mtp_forward(MtpState& st, std::span<const int32_t> tokens, const float* hidden, LogitsMode logits,
                   ForwardOutput& out, const WeightMatrix* head = nullptr);

  // Runs tokens at cache indices state.n_past() ... (rotary positions: SequenceState::position)
  // and advances the state. Reuses out's buffers. Throws std::invalid_argument / std::length_error
  // on bad tokens or overflow of the context, std::logic_error while the state holds part of an
  // image (forward_image), leaving the state untouched.
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out);
  // The same pass over image rows: rows [first_row, first_row + n_rows) of an nx x ny image at positions
  // state.n_past()..., rotated by their M-RoPE positions (SequenceState::position: (p0, p0 + row,
  // p0 + col)); GDN layers see them as ordinary tokens in raster order. The options mean what they
  // mean for forward() (cuts inside an image leave a state the image's remaining rows continue;
  // logits, usually LogitsMode::None, are the rows' own). Text tokens after the image (forward())
  // continue at p0 + max(nx, ny). Throws, leaving the state untouched: std::invalid_argument on a
  // bad grid or row range, std::logic_error where the rows do not start a new image or continue the
  // open one (first_row, nx, ny), std::length_error where the image does not fit the context.
  void forward_image(SequenceState& state, const EmbeddingRows& rows, const ForwardOptions& opt,
                     ForwardOutput& out);
  // The same pass with a replay log instead of state copies (see above); validates as forward().
  void forward_logged(SequenceState& state, std::span<const int32_t> tokens, const LoggedPassOptions& opt,
                      ForwardOutput& out);

  // After a forward_logged pass `out` on `state` (and nothing else on it since): puts
  // the state back to position pos in [out.replay.pos0, state.n_past()] — KV truncated, the
  // recurrent state recomputed from the log (pos - pos0 per-token updates per head). Throws
  // std::logic_error when the log does not belong to this state as it is now.
  void roll_back(SequenceState& state, const ForwardOutput& out, int64_t pos);

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
  void pack_for_matrix_path();

  // The file's mapping (null while unloaded): bind_weights() makes w_ point into it.
  void bind_weights(std::unique_ptr<GgufFile> file);
  void require_weights(const char* what) const;
  std::unique_ptr<GgufFile> file_;
  std::string path_;
  uint64_t fingerprint_ = 0;
  bool pack_matrices_ = true;
  bool has_mtp_ = false;
  Qwen35HParams hp_;
  Qwen35Weights w_;
  kernels::PackedWeights packed_;
  std::mutex mu_;  // forward() uses the shared workspace and pool below
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuResourceGovernor> governor_;  // declared after pool_: destroyed first
  std::unique_ptr<Workspace> ws_;
};

}  // namespace tandem
