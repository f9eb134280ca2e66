// The qwen35 hybrid model: a loaded GGUF plus the forward pass over a batch of
// tokens of one sequence. Read forward() top to bottom for the whole network
// (spec §4); each layer kind is one function below it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/amx_weight_pack.h"
#include "model/qwen35_hparams.h"
#include "model/qwen35_weights.h"
#include "model/sequence_state.h"
#include "runtime/scratch.h"
#include "runtime/resource_governor.h"
#include "runtime/thread_pool.h"

namespace tandem {

enum class LogitsMode { None, Last, All };

// Which Gated DeltaNet algorithm runs for multi-token batches. Auto: per-token for
// a single token, chunked otherwise. (Single tokens always run per token.)
enum class GdnAlgorithm { Auto, Recurrent, Chunked };

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
  // false: slot 0 (the state after the last token, which is the live state the sequence
  // holds anyway) is not copied; it is returned with pos = -1. A verification pass only
  // ever rolls back to slots 1..k, so it saves one full state write per pass.
  bool rollback_live = true;
  // Multi-column products share each weight read across the T columns (kernels/matmul.h).
  // false: every column runs as its own one-column product (a switch for the verification
  // benchmark, docs/speculation.md; the numbers are the same).
  bool column_shared = true;
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
  int64_t n_vocab = 0;

  const float* logits_row(size_t i) const { return logits.data() + i * static_cast<size_t>(n_vocab); }
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

class Qwen35Model {
 public:
  // Opens, validates and binds a qwen35 GGUF. Throws GgufError with a clear message.
  // n_threads <= 0: one compute thread per physical core.
  static std::unique_ptr<Qwen35Model> load(const std::string& path, int n_threads = 0);
  ~Qwen35Model();

  const Qwen35HParams& hparams() const { return hp_; }
  const Qwen35Weights& weights() const { return w_; }
  const GgufFile& file() const { return *file_; }
  ThreadPool& pool() { return *pool_; }
  // Bytes of the weights' AMX tile-order copies (0 unless loaded on the Amx tier).
  size_t packed_weight_bytes() const { return packed_.bytes(); }
  // Gives the pool's resources back between bursts (idle release, 3 s by default).
  CpuResourceGovernor& governor() { return *governor_; }

  std::unique_ptr<SequenceState> new_sequence(int64_t n_ctx) const;
  bool has_mtp() const { return w_.mtp.has_value(); }
  std::unique_ptr<MtpState> new_mtp_state(int64_t n_ctx) const;

  // The MTP head (spec §7) over T rows at positions st.n_past()...: row t combines
  // token tokens[t] with hidden[t], the trunk's final normed hidden state of the
  // previous position (or the head's own hidden output when chaining drafts).
  // out.hidden receives the head's normed output rows (T x n_embd, the next step's
  // hidden input); out.logits the requested rows through `head` (default: the shared
  // LM head; a trimmed draft head is a matrix with fewer rows).
  void mtp_forward(MtpState& st, std::span<const int32_t> tokens, const float* hidden, LogitsMode logits,
                   ForwardOutput& out, const WeightMatrix* head = nullptr);

  // Runs tokens at positions state.n_past() ... and advances the state. Reuses out's
  // buffers. Throws std::invalid_argument / std::length_error on bad tokens or overflow
  // of the context, leaving the state untouched.
  void forward(SequenceState& state, std::span<const int32_t> tokens, const ForwardOptions& opt,
               ForwardOutput& out);

 private:
  struct Workspace;
  Qwen35Model() = default;
  void gdn_layer(int il, int g, SequenceState& st, int64_t T, const ForwardOptions& opt, ForwardOutput& out,
                 const std::vector<int64_t>& rel_cuts);
  // Gated attention over the cache rows [0, pos0 + T); appends T rows at pos0.
  void attention_layer(const Qwen35LayerWeights& L, float* k_cache, float* v_cache, int64_t pos0, int64_t T);
  void ffn(const Qwen35LayerWeights& L, int64_t T);
  // kernels::matmul on the workspace's context, honouring ForwardOptions::column_shared.
  void project(const WeightMatrix& W, const float* X, int64_t ldx, int64_t T, float* Y, int64_t ldy);

  // On the Amx tier: every Q4_0/Q8_0 matrix gets a tile-order copy (kernels/amx_weight_pack.h).
  void pack_for_matrix_path();

  std::unique_ptr<GgufFile> file_;
  Qwen35HParams hp_;
  Qwen35Weights w_;
  kernels::amx::PackedWeights packed_;
  std::mutex mu_;  // forward() uses the shared workspace and pool below
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuResourceGovernor> governor_;  // declared after pool_: destroyed first
  std::unique_ptr<Workspace> ws_;
};

}  // namespace tandem
