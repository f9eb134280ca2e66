// A StateBackend that reports each unit of model work to the watchdog (serve/lifecycle/watchdog.h): every
// forward pass, image pass, verification pass and draft is a heartbeat with its own deadline
// (base + per token), so that a hang is caught after one pass's allowance rather than a whole
// prefill's. The rest forwards unchanged: the slot sees the backend it wraps. The engine wraps its
// ModelBackends when the watchdog is on.
#pragma once

#include <memory>

#include "serve/lifecycle/watchdog.h"
#include "serve/slot/state_backend.h"

namespace tandem::serve {

class WatchedBackend final : public StateBackend {
 public:
  // The watchdog must outlive the backend.
  WatchedBackend(std::unique_ptr<StateBackend> inner, Watchdog& watchdog) : in_(std::move(inner)), wd_(watchdog) {}

  int64_t n_ctx() const override { return in_->n_ctx(); }
  int64_t n_past() const override { return in_->n_past(); }
  int64_t n_vocab() const override { return in_->n_vocab(); }
  int64_t row_width() const override { return in_->row_width(); }
  size_t checkpoint_bytes() const override { return in_->checkpoint_bytes(); }
  size_t sequence_bytes(int64_t n_tokens) const override { return in_->sequence_bytes(n_tokens); }
  size_t kv_bytes() const override { return in_->kv_bytes(); }
  size_t recurrent_bytes() const override { return in_->recurrent_bytes(); }
  void reset() override { in_->reset(); }
  void save(RecurrentCheckpoint& cp) override { in_->save(cp); }
  void restore(const RecurrentCheckpoint& cp) override { in_->restore(cp); }
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  void run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                 std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return in_->logits(); }
  std::unique_ptr<SavedSequence> save_sequence() const override { return in_->save_sequence(); }
  void load_sequence(const SavedSequence& saved) override { in_->load_sequence(saved); }
  std::string state_layout() const override { return in_->state_layout(); }
  std::unique_ptr<SavedSequence> read_sequence(BinaryReader& r) const override { return in_->read_sequence(r); }
  void release_memory() override { in_->release_memory(); }
  void reacquire_memory() override { in_->reacquire_memory(); }
  void start_speculation(const SpecConfig& cfg) override { in_->start_speculation(cfg); }
  void stop_speculation() override { in_->stop_speculation(); }
  void draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
             DraftConstraint* constraint = nullptr) override;
  VerifiedRows verify(std::span<const int32_t> tokens) override;
  void roll_back(int64_t pos) override { in_->roll_back(pos); }
  size_t speculation_bytes() const override { return in_->speculation_bytes(); }
  const SpecPassCounts& spec_counts() const override { return in_->spec_counts(); }

 private:
  std::unique_ptr<StateBackend> in_;
  Watchdog& wd_;
};

}  // namespace tandem::serve
