#include "serve/backend/null_backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tandem::serve {

namespace {
constexpr std::string_view kNullKind = "dry run";

struct NullSaved final : SavedSequence {
  int64_t n_past;
  size_t size;
  size_t bytes() const override { return size; }
  int64_t n_tokens() const override { return n_past; }
  std::string_view kind() const override { return kNullKind; }
  void write(BinaryWriter& w) const override {
    w.pod<int64_t>(n_past);
    w.pod<uint64_t>(size);
  }
};
}  // namespace

NullBackend::NullBackend(int64_t n_ctx, size_t recurrent_bytes, size_t kv_bytes_per_token)
    : n_ctx_(n_ctx), recurrent_bytes_(recurrent_bytes), kv_bytes_per_token_(kv_bytes_per_token) {
  if (n_ctx <= 0) throw std::invalid_argument("NullBackend: n_ctx must be positive, got " + std::to_string(n_ctx));
}

NullBackend NullBackend::for_model(const ModelShape& shape, int64_t n_ctx) {
  const SequenceState probe(shape.sequence, 1);  // one KV row: cheap, and the layouts are the model's own
  return NullBackend(n_ctx, probe.recurrent_bytes(), probe.kv_bytes_per_token());
}

size_t NullBackend::sequence_bytes(int64_t n_tokens) const {
  return recurrent_bytes_ + static_cast<size_t>(n_tokens) * kv_bytes_per_token_;
}

void NullBackend::reset() {
  n_past_ = 0;
  verify_pos0_ = -1;
}

void NullBackend::restore(const RecurrentCheckpoint& cp) {
  if (cp.pos < 0 || cp.pos > n_past_)
    throw std::out_of_range("NullBackend::restore: checkpoint at " + std::to_string(cp.pos) + " outside [0, " +
                            std::to_string(n_past_) + "]");
  n_past_ = cp.pos;
  verify_pos0_ = -1;
}

void NullBackend::advance(int64_t T, const char* what) {
  if (T == 0) throw std::invalid_argument(std::string("NullBackend::") + what + ": empty pass");
  if (n_past_ + T > n_ctx_)
    throw std::length_error(std::string("NullBackend::") + what + ": " + std::to_string(n_past_) + " cached + " +
                            std::to_string(T) + " new tokens exceed the context of " + std::to_string(n_ctx_));
  n_past_ += T;
}

void NullBackend::run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool,
                      std::span<RecurrentCheckpoint> cut_states) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (cut_states.size() != cuts.size()) throw std::invalid_argument("NullBackend::run: one state per cut expected");
  for (size_t i = 0; i < cuts.size(); ++i)
    if (cuts[i] <= n_past_ || cuts[i] > n_past_ + T)
      throw std::invalid_argument("NullBackend::run: cut " + std::to_string(cuts[i]) + " outside (" +
                                  std::to_string(n_past_) + ", " + std::to_string(n_past_ + T) + "]");
  verify_pos0_ = -1;
  advance(T, "run");
  for (size_t i = 0; i < cuts.size(); ++i) cut_states[i].pos = cuts[i];
}

void NullBackend::run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool,
                            std::span<RecurrentCheckpoint> cut_states) {
  if (piece.nx <= 0 || piece.ny <= 0 || piece.first_row < 0 ||
      piece.first_row + piece.n_rows > static_cast<int64_t>(piece.nx) * piece.ny)
    throw std::invalid_argument("NullBackend::run_image: rows [" + std::to_string(piece.first_row) + ", " +
                                std::to_string(piece.first_row + piece.n_rows) + ") outside a " +
                                std::to_string(piece.nx) + " x " + std::to_string(piece.ny) + " image");
  // The same position and cut bookkeeping as a text pass: the dry run needs no rows.
  scratch_.assign(static_cast<size_t>(std::max<int64_t>(0, piece.n_rows)), piece.placeholder);
  run(scratch_, cuts, false, cut_states);
}

std::unique_ptr<SavedSequence> NullBackend::save_sequence() const {
  auto s = std::make_unique<NullSaved>();
  s->n_past = n_past_;
  s->size = sequence_bytes(n_past_);
  return s;
}

void NullBackend::load_sequence(const SavedSequence& saved) {
  if (saved.kind() != kNullKind)
    throw std::invalid_argument("NullBackend::load_sequence: the sequence was saved by another backend (" +
                                std::string(saved.kind()) + ")");
  const auto& s = static_cast<const NullSaved&>(saved);
  if (s.n_past > n_ctx_)
    throw std::length_error("NullBackend::load_sequence: " + std::to_string(s.n_past) +
                            " tokens do not fit the context of " + std::to_string(n_ctx_));
  n_past_ = s.n_past;
  verify_pos0_ = -1;
}

std::string NullBackend::state_layout() const {
  return "dry run: recurrent " + std::to_string(recurrent_bytes_) + " bytes, KV " + std::to_string(kv_bytes_per_token_) +
         " bytes per row";
}

std::unique_ptr<SavedSequence> NullBackend::read_sequence(BinaryReader& r) const {
  auto s = std::make_unique<NullSaved>();
  s->n_past = r.pod<int64_t>();
  s->size = r.pod<uint64_t>();
  if (s->n_past < 0 || s->n_past > n_ctx_ || s->size != sequence_bytes(s->n_past))
    r.fail("a saved dry-run sequence of " + std::to_string(s->n_past) + " tokens does not fit this backend (corrupted)");
  return s;
}

void NullBackend::release_memory() { reset(); }
void NullBackend::reacquire_memory() {}

void NullBackend::draft(int32_t, int max_drafts, std::span<const int32_t>, std::vector<int32_t>& drafts, DraftConstraint*) {
  if (!speculating_) throw std::logic_error("NullBackend::draft: speculation is not started");
  drafts.assign(static_cast<size_t>(std::max(0, max_drafts)), 0);
}

VerifiedRows NullBackend::verify(std::span<const int32_t> tokens) {
  if (!speculating_) throw std::logic_error("NullBackend::verify: speculation is not started");
  const int64_t T = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = n_past_;
  verify_pos0_ = -1;
  advance(T, "verify");
  verify_pos0_ = pos0;
  verify_n_ = T;
  if (T > 1) ++spec_counts_.verify_passes;
  return VerifiedRows{nullptr, T > 1 ? T : 1, 0};
}

void NullBackend::roll_back(int64_t pos) {
  if (verify_pos0_ < 0 || pos <= verify_pos0_ || pos >= verify_pos0_ + verify_n_)
    throw std::logic_error("NullBackend::roll_back: position " + std::to_string(pos) +
                           " is not inside the last verification pass");
  n_past_ = pos;
  verify_pos0_ = -1;
  ++spec_counts_.roll_backs;
}

}  // namespace tandem::serve
