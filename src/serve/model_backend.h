// The real mechanism: Qwen35Model::forward on one SequenceState. Checkpoints are the
// model's RecurrentCheckpoint copies; a pass hands back the states at cut positions through
// ForwardOptions::cuts, so a checkpoint inside a pass costs a copy and no extra pass.
#pragma once

#include <memory>

#include "model/qwen35_model.h"
#include "serve/state_backend.h"

namespace tandem::serve {

class ModelBackend final : public StateBackend {
 public:
  // The model must outlive the backend. n_ctx: KV rows allocated for this sequence.
  ModelBackend(Qwen35Model& model, int64_t n_ctx);

  int64_t n_ctx() const override { return state_->n_ctx(); }
  int64_t n_past() const override { return state_->n_past(); }
  int64_t n_vocab() const override { return model_.hparams().n_vocab; }
  size_t checkpoint_bytes() const override { return state_->recurrent_bytes(); }
  size_t sequence_bytes(int64_t n_tokens) const override;
  void reset() override { state_->reset(); }
  void save(RecurrentCheckpoint& cp) override { state_->save_recurrent(cp); }
  void restore(const RecurrentCheckpoint& cp) override { state_->restore(cp); }
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return logits_; }
  std::unique_ptr<SavedSequence> save_sequence() const override;
  void load_sequence(const SavedSequence& saved) override;

  const SequenceState& state() const { return *state_; }

 private:
  Qwen35Model& model_;
  std::unique_ptr<SequenceState> state_;
  ForwardOptions opt_;  // reused: no allocation per decode step
  ForwardOutput out_;
  std::span<const float> logits_;
};

}  // namespace tandem::serve
