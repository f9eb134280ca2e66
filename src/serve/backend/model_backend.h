// The real mechanism: HybridModel::forward (model/hybrid_model.h) on one SequenceState, which this backend owns and is
// the only one to write. Checkpoints are the model's RecurrentCheckpoint copies; a pass hands
// back the states at cut positions through ForwardOptions::cuts, so a checkpoint inside a pass
// costs a copy and no extra pass. With speculation on, an MtpDrafter (serve/spec/mtp_drafter.h) sees
// every pass and every jump of the state, verification passes keep a replay log (or rollback
// states) and roll_back() goes back inside the last one.
#pragma once

#include <memory>

#include "model/hybrid_model.h"
#include "serve/slot/state_backend.h"

namespace tandem::serve {

class MtpDrafter;  // serve/spec/mtp_drafter.h: not included, so that no kernel type reaches this header's users

class ModelBackend final : public StateBackend {
 public:
  // The model must outlive the backend. n_ctx: KV rows allocated for this sequence.
  ModelBackend(HybridModel& model, int64_t n_ctx);
  // Takes over a sequence of this model (benchmarks and tests that built it by hand).
  ModelBackend(HybridModel& model, std::unique_ptr<SequenceState> state);
  ~ModelBackend() override;

  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return state_->n_past(); }
  int64_t n_vocab() const override { return model_.shape().n_vocab; }
  int64_t row_width() const override { return model_.shape().n_embd; }
  size_t checkpoint_bytes() const override { return state_->recurrent_bytes(); }
  size_t sequence_bytes(int64_t n_tokens) const override;
  size_t kv_bytes() const override { return state_->kv_bytes(); }
  size_t recurrent_bytes() const override { return state_->recurrent_bytes(); }
  void reset() override;
  void save(RecurrentCheckpoint& cp) override { state_->save_recurrent(cp); }
  void restore(const RecurrentCheckpoint& cp) override;
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  void run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                 std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return logits_; }
  std::unique_ptr<SavedSequence> save_sequence() const override;
  void load_sequence(const SavedSequence& saved) override;
  std::string state_layout() const override;
  std::unique_ptr<SavedSequence> read_sequence(BinaryReader& r) const override;
  void release_memory() override;
  void reacquire_memory() override;

  void start_speculation(const SpecConfig& cfg) override;
  void stop_speculation() override;
  void draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
             DraftConstraint* constraint = nullptr) override;
  VerifiedRows verify(std::span<const int32_t> tokens) override;
  void roll_back(int64_t pos) override;
  size_t speculation_bytes() const override;
  const SpecPassCounts& spec_counts() const override { return spec_counts_; }

  // For tests and benchmarks: the sequence (read-only), the model, and the drafter (a benchmark
  // that ran a prompt pass itself tells it through drafter()->observe_pass).
  const SequenceState& state() const { return *state_; }
  HybridModel& model() { return model_; }
  // What the last run() returned (its retained rollback states, say).
  const ForwardOutput& last_pass() const { return out_; }
  // nullptr while speculation is off.
  MtpDrafter* drafter() { return drafter_.get(); }
  // Replaces the live sequence by a copy of `from` (benchmarks: the same prompt state per round).
  void load_state(const SequenceState& from);

  // How many of a prompt pass's last tokens run the delta rule per token
  // (ForwardOptions::per_token_tail): the server's draft length (SpecConfig::draft_max),
  // whether or not speculation is on, so that a speculating slot's prompt passes, which run
  // those tokens per token to keep their rollback states, compute the same bits as a plain
  // slot's. kDefaultPromptTail matches SpecConfig's default draft length. Throws
  // std::invalid_argument for n < 0 (here, not on every later pass).
  static constexpr int64_t kDefaultPromptTail = 3;
  void set_prompt_tail(int64_t n);

 private:
  HybridModel& model_;
  int64_t n_ctx_;  // the context this slot was given (the live state has one row while released)
  std::unique_ptr<SequenceState> state_;
  ForwardOptions opt_;  // reused: no allocation per decode step
  ForwardOutput out_;
  std::span<const float> logits_;
  int64_t prompt_tail_ = kDefaultPromptTail;
  std::vector<int32_t> placeholders_;  // an image piece's rows as the drafter records them

  // A prompt pass's options (run and run_image); `run_pass` runs it and hands the cut states back.
  void configure_prompt_pass(int64_t n, std::span<const int64_t> cuts, bool want_logits);
  template <typename Pass>
  void run_pass(std::span<RecurrentCheckpoint> cut_states, bool want_logits, Pass&& pass);

  // Speculation (null/unused while off).
  SpecConfig spec_;
  std::unique_ptr<MtpDrafter> drafter_;  // null without MTP drafts (SpecConfig::mtp_drafts off)
  bool speculating_ = false;
  ForwardOptions vopt_;     // verification in copy mode (and single tokens)
  LoggedPassOptions lopt_;  // verification with a replay log
  ForwardOutput vout_;
  int64_t verify_pos0_ = -1, verify_n_ = 0;  // the last verification pass, until the state moves on
  SpecPassCounts spec_counts_;
};

}  // namespace tandem::serve
