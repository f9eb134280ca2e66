// What one forward pass takes and hands back, for every architecture (model/hybrid_model.h):
// the options that say which states a pass returns (checkpoints at cut positions, rollback
// states), the outputs, and how a model is loaded. Which of them an architecture honours beyond
// the common ones (image rows, replay logs) its model class says (HybridModel's capabilities).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/sequence_state.h"
#include "runtime/cpu_features.h"

namespace tandem {

enum class LogitsMode { None, Last, All };

// Which Gated DeltaNet algorithm runs for multi-token batches. Auto: chunked where the CPU
// tier has a fast chunked body (kernels::delta_rule_prefers_chunked: AVX-512), per token
// otherwise — on AVX2 the per-token body beats the scalar chunked reference ~29× (bench/history/2026-11-30-xeon-amx.md).
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
// prefill (model/qwen35/rollback_aware_prefill.h), decided once per pass.
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


}  // namespace tandem
