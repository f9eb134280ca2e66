#include "serve/lifecycle/watched_backend.h"

namespace tandem::serve {

void WatchedBackend::run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
                         std::span<RecurrentCheckpoint> cut_states) {
  const auto beat = wd_.unit(WorkKind::Pass, static_cast<int64_t>(tokens.size()));
  in_->run(tokens, cuts, want_logits, cut_states);
}

void WatchedBackend::run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                               std::span<RecurrentCheckpoint> cut_states) {
  const auto beat = wd_.unit(WorkKind::ImagePass, piece.n_rows);
  in_->run_image(piece, cuts, want_logits, cut_states);
}

void WatchedBackend::draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
                           DraftConstraint* constraint) {
  // One MTP call per draft, after a catch-up over `context` when the drafter never saw it.
  const auto beat = wd_.unit(WorkKind::Draft, max_drafts + static_cast<int64_t>(context.size()));
  in_->draft(last, max_drafts, context, drafts, constraint);
}

VerifiedRows WatchedBackend::verify(std::span<const int32_t> tokens) {
  const auto beat = wd_.unit(WorkKind::Verify, static_cast<int64_t>(tokens.size()));
  return in_->verify(tokens);
}

}  // namespace tandem::serve
