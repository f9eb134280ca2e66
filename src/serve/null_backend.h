// The dry-run mechanism: no network, no state, only positions and the byte counts a real
// model would copy (so that budgets and "bytes copied" come out the same as on the server).
#pragma once

#include "model/qwen35_hparams.h"
#include "serve/state_backend.h"

namespace tandem::serve {

class NullBackend final : public StateBackend {
 public:
  // recurrent_bytes: one checkpoint; kv_bytes_per_token: KV rows of one token.
  NullBackend(int64_t n_ctx, size_t recurrent_bytes, size_t kv_bytes_per_token);
  // The byte counts of a SequenceState of this model (what ModelBackend reports).
  static NullBackend for_model(const Qwen35HParams& hp, int64_t n_ctx);

  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return n_past_; }
  int64_t n_vocab() const override { return 0; }
  size_t checkpoint_bytes() const override { return recurrent_bytes_; }
  size_t sequence_bytes(int64_t n_tokens) const override;
  void reset() override { n_past_ = 0; }
  void save(RecurrentCheckpoint& cp) override { cp.pos = n_past_; }
  void restore(const RecurrentCheckpoint& cp) override;
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return {}; }
  std::unique_ptr<SavedSequence> save_sequence() const override;
  void load_sequence(const SavedSequence& saved) override;

 private:
  int64_t n_ctx_;
  size_t recurrent_bytes_, kv_bytes_per_token_;
  int64_t n_past_ = 0;
};

}  // namespace tandem::serve
