// The dry-run mechanism: no network, no state, only positions and the byte counts a real
// model would copy (so that budgets and "bytes copied" come out the same as on the server).
// Speculation runs through the same Speculator: draft() proposes placeholders (a caller that
// knows what the server accepted rewrites them through the speculator's draft hook, as
// serve/backend/dry_run.cpp does from a request log), verify() advances the position, roll_back() goes
// back; the passes and roll-backs are counted (spec_counts()).
#pragma once

#include <vector>

#include "model/model_shape.h"
#include "serve/slot/state_backend.h"

namespace tandem::serve {

class NullBackend final : public StateBackend {
 public:
  // recurrent_bytes: one checkpoint; kv_bytes_per_token: KV rows of one token.
  NullBackend(int64_t n_ctx, size_t recurrent_bytes, size_t kv_bytes_per_token);
  // The byte counts of a SequenceState of this model (what ModelBackend reports).
  static NullBackend for_model(const ModelShape& shape, int64_t n_ctx);

  int64_t n_ctx() const override { return n_ctx_; }
  int64_t n_past() const override { return n_past_; }
  int64_t n_vocab() const override { return 0; }
  int64_t row_width() const override { return 0; }
  size_t checkpoint_bytes() const override { return recurrent_bytes_; }
  size_t sequence_bytes(int64_t n_tokens) const override;
  size_t kv_bytes() const override { return static_cast<size_t>(n_ctx_) * kv_bytes_per_token_; }
  size_t recurrent_bytes() const override { return recurrent_bytes_; }
  void reset() override;
  void save(RecurrentCheckpoint& cp) override { cp.pos = n_past_; }
  void restore(const RecurrentCheckpoint& cp) override;
  void run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
           std::span<RecurrentCheckpoint> cut_states) override;
  void run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                 std::span<RecurrentCheckpoint> cut_states) override;
  std::span<const float> logits() const override { return {}; }
  std::unique_ptr<SavedSequence> save_sequence() const override;
  void load_sequence(const SavedSequence& saved) override;
  std::string state_layout() const override;
  std::unique_ptr<SavedSequence> read_sequence(BinaryReader& r) const override;
  void release_memory() override;
  void reacquire_memory() override;

  void start_speculation(const SpecConfig& cfg) override { speculating_ = true; }
  void stop_speculation() override { speculating_ = false; }
  // max_drafts placeholder tokens (0: the dry run knows no token): what a drafter that always
  // proposes its limit gives; the real count comes from the draft hook.
  void draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
             DraftConstraint* constraint = nullptr) override;
  VerifiedRows verify(std::span<const int32_t> tokens) override;
  void roll_back(int64_t pos) override;
  size_t speculation_bytes() const override { return 0; }
  const SpecPassCounts& spec_counts() const override { return spec_counts_; }

 private:
  void advance(int64_t T, const char* what);

  int64_t n_ctx_;
  size_t recurrent_bytes_, kv_bytes_per_token_;
  int64_t n_past_ = 0;
  bool speculating_ = false;
  int64_t verify_pos0_ = -1, verify_n_ = 0;
  SpecPassCounts spec_counts_;
  std::vector<int32_t> scratch_;  // an image piece's placeholder rows
};

}  // namespace tandem::serve
