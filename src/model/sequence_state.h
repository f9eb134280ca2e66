// Everything one sequence (one server slot) carries between forward calls:
// the attention KV cache of each full-attention layer, and the recurrent state
// (conv window + delta-rule state) of each Gated DeltaNet layer.
//
// The recurrent state lives in one contiguous buffer so that a checkpoint is a
// single memcpy; the KV cache needs no copy to go back in time: truncating it is
// just moving the position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/cache_aligned.h"

#include "model/qwen35_hparams.h"

namespace tandem {

// A sequence's recurrent state (conv states then delta-rule states, every GDN layer), cache-line
// aligned so that kernels may stream whole rows into it.
using StateBuffer = CacheAlignedVector<float>;

// A copy of the recurrent state of all GDN layers at token position `pos`
// (the state after consuming tokens [0, pos)). Cache-line aligned too: the rollback states of a
// prompt pass are written with streaming stores (they are not read again soon).
struct RecurrentCheckpoint {
  int64_t pos = -1;
  StateBuffer data;
  size_t bytes() const { return data.size() * sizeof(float); }
};

class SequenceState {
 public:
  SequenceState(const Qwen35HParams& hp, int64_t n_ctx);

  int64_t n_past() const { return n_past_; }
  int64_t n_ctx() const { return n_ctx_; }

  // Recurrent state of GDN layer g (0-based among GDN layers).
  float* conv(int g) { return recurrent_.data() + g * conv_floats_; }
  float* ssm(int g) { return recurrent_.data() + n_gdn_ * conv_floats_ + g * ssm_floats_; }
  int64_t conv_floats() const { return conv_floats_; }
  int64_t ssm_floats() const { return ssm_floats_; }
  size_t recurrent_bytes() const { return recurrent_.size() * sizeof(float); }

  // KV cache of attention layer a (0-based among attention layers): n_ctx rows of kv_dim floats.
  float* k_cache(int a) { return kv_.data() + (2 * a) * n_ctx_ * kv_dim_; }
  float* v_cache(int a) { return kv_.data() + (2 * a + 1) * n_ctx_ * kv_dim_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t kv_bytes() const { return kv_.size() * sizeof(float); }
  size_t kv_bytes_per_token() const { return static_cast<size_t>(2 * n_attn_ * kv_dim_) * sizeof(float); }

  // Copies the recurrent state out (checkpoint.pos = n_past()). Reuses cp.data's capacity.
  void save_recurrent(RecurrentCheckpoint& cp) const;
  // Goes back to a checkpoint: recurrent state copied in, KV cache truncated to cp.pos.
  // cp.pos must be <= n_past() (the KV rows before it are still the ones it was taken with).
  void restore(const RecurrentCheckpoint& cp);
  // Truncates the KV cache to pos <= n_past() and sets the position; the caller must
  // also put the recurrent state of that position in place (restore() does both).
  void truncate_kv(int64_t pos);
  // Overwrites the recurrent state (a buffer of recurrent_bytes(), e.g. a rollback state).
  void set_recurrent(const float* data);
  // Exchanges the recurrent state's storage with other (resized to recurrent_floats() first),
  // in O(1): a pass can keep the state it started from while writing the new one elsewhere.
  void swap_recurrent(StateBuffer& other);
  // Makes this an exact copy of other (same model, this n_ctx >= other's n_past).
  void copy_from(const SequenceState& other);
  // Back to an empty sequence: zero state, position 0.
  void reset();

  // Advanced by the forward pass.
  void advance(int64_t n) {
    n_past_ += n;
    bump_version();
  }
  // Changes whenever the position or the recurrent state is set (a ReplayLog is only valid
  // for the version the pass left).
  uint64_t version() const { return version_; }
  const float* recurrent_data() const { return recurrent_.data(); }
  int64_t recurrent_floats() const { return static_cast<int64_t>(recurrent_.size()); }

 private:
  void bump_version();
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  uint64_t version_ = 0;
  int n_gdn_, n_attn_;
  int64_t conv_floats_, ssm_floats_, kv_dim_;
  StateBuffer recurrent_;
  std::vector<float> kv_;
};

}  // namespace tandem
