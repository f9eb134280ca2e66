// The real mechanism: Qwen35Model::forward on one SequenceState. Checkpoints are the
// model's RecurrentCheckpoint copies; a pass hands back the states at cut positions through
// ForwardOptions::cuts, so a checkpoint inside a pass costs a copy and no extra pass.
#pragma once

#include <memory>

#include "model/qwen35_model.h"
#include "serve/state_backend.h"

namespace tandem::serve {

// Sees every pass the backend runs and every jump of its state. The speculator
// (serve/speculator.h) keeps the MTP head in step with the trunk through it: prompt passes
// return their hidden rows (and retain rollback states) when it asks for them.
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  // Adds options to a pass of n_tokens tokens (called with the backend's defaults in opt).
  virtual void configure_pass(int64_t n_tokens, ForwardOptions& opt) = 0;
  // The pass ran tokens at positions pos0 ...; out holds what configure_pass asked for.
  virtual void observe_pass(int64_t pos0, std::span<const int32_t> tokens, const ForwardOutput& out) = 0;
  // The state went back to position pos with the same tokens before it (restore, reset).
  virtual void on_truncate(int64_t pos) = 0;
  // The state was replaced by another sequence's (a prompt-cache load).
  virtual void on_replace() = 0;
};

class ModelBackend final : public StateBackend {
 public:
  // The model must outlive the backend. n_ctx: KV rows allocated for this sequence.
  ModelBackend(Qwen35Model& model, int64_t n_ctx);

  int64_t n_ctx() const override { return state_->n_ctx(); }
  int64_t n_past() const override { return state_->n_past(); }
  int64_t n_vocab() const override { return model_.hparams().n_vocab; }
  size_t checkpoint_bytes() const override { return state_->recurrent_bytes(); }
  size_t sequence_bytes(int64_t n_tokens) const override;
  void reset() override;
  void save(RecurrentCheckpoint& cp) override { state_->save_recurrent(cp); }
  void restore(const RecurrentCheckpoint& cp) override;
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return logits_; }
  std::unique_ptr<SavedSequence> save_sequence() const override;
  void load_sequence(const SavedSequence& saved) override;

  const SequenceState& state() const { return *state_; }
  // For the speculator, which runs its verification passes on the state directly.
  SequenceState& mutable_state() { return *state_; }
  Qwen35Model& model() { return model_; }
  // nullptr: none. The observer must outlive its registration.
  void set_observer(PassObserver* obs) { observer_ = obs; }
  // How many of a prompt pass's last tokens run the delta rule per token
  // (ForwardOptions::per_token_tail): the server's draft length (SpecConfig::draft_max),
  // whether or not speculation is on, so that a speculating slot's prompt passes, which run
  // those tokens per token to keep their rollback states, compute the same bits as a plain
  // slot's. kDefaultPromptTail matches SpecConfig's default draft length. Throws
  // std::invalid_argument for n < 0 (here, not on every later pass).
  static constexpr int64_t kDefaultPromptTail = 3;
  void set_prompt_tail(int64_t n);

 private:
  Qwen35Model& model_;
  std::unique_ptr<SequenceState> state_;
  ForwardOptions opt_;  // reused: no allocation per decode step
  ForwardOutput out_;
  std::span<const float> logits_;
  PassObserver* observer_ = nullptr;
  int64_t prompt_tail_ = kDefaultPromptTail;
};

}  // namespace tandem::serve
