#include "serve/null_backend.h"

#include <stdexcept>
#include <string>

namespace tandem::serve {

namespace {
struct NullSaved final : SavedSequence {
  int64_t n_past;
  size_t size;
  size_t bytes() const override { return size; }
};
}  // namespace

NullBackend::NullBackend(int64_t n_ctx, size_t recurrent_bytes, size_t kv_bytes_per_token)
    : n_ctx_(n_ctx), recurrent_bytes_(recurrent_bytes), kv_bytes_per_token_(kv_bytes_per_token) {
  if (n_ctx <= 0) throw std::invalid_argument("NullBackend: n_ctx must be positive, got " + std::to_string(n_ctx));
}

NullBackend NullBackend::for_model(const Qwen35HParams& hp, int64_t n_ctx) {
  const SequenceState probe(hp, 1);  // one KV row: cheap, and the layouts are the model's own
  return NullBackend(n_ctx, probe.recurrent_bytes(), probe.kv_bytes_per_token());
}

size_t NullBackend::sequence_bytes(int64_t n_tokens) const {
  return recurrent_bytes_ + static_cast<size_t>(n_tokens) * kv_bytes_per_token_;
}

void NullBackend::restore(const RecurrentCheckpoint& cp) {
  if (cp.pos < 0 || cp.pos > n_past_)
    throw std::out_of_range("NullBackend::restore: checkpoint at " + std::to_string(cp.pos) + " outside [0, " +
                            std::to_string(n_past_) + "]");
  n_past_ = cp.pos;
}

void NullBackend::run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool,
                      std::span<RecurrentCheckpoint> cut_states) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) throw std::invalid_argument("NullBackend::run: empty pass");
  if (n_past_ + T > n_ctx_)
    throw std::length_error("NullBackend::run: " + std::to_string(n_past_) + " cached + " + std::to_string(T) +
                            " new tokens exceed the context of " + std::to_string(n_ctx_));
  if (cut_states.size() != cuts.size()) throw std::invalid_argument("NullBackend::run: one state per cut expected");
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (cuts[i] <= n_past_ || cuts[i] > n_past_ + T)
      throw std::invalid_argument("NullBackend::run: cut " + std::to_string(cuts[i]) + " outside (" +
                                  std::to_string(n_past_) + ", " + std::to_string(n_past_ + T) + "]");
    cut_states[i].pos = cuts[i];
  }
  n_past_ += T;
}

std::unique_ptr<SavedSequence> NullBackend::save_sequence() const {
  auto s = std::make_unique<NullSaved>();
  s->n_past = n_past_;
  s->size = sequence_bytes(n_past_);
  return s;
}

void NullBackend::load_sequence(const SavedSequence& saved) {
  const auto* s = dynamic_cast<const NullSaved*>(&saved);
  if (!s) throw std::invalid_argument("NullBackend::load_sequence: the sequence was saved by another backend");
  if (s->n_past > n_ctx_)
    throw std::length_error("NullBackend::load_sequence: " + std::to_string(s->n_past) +
                            " tokens do not fit the context of " + std::to_string(n_ctx_));
  n_past_ = s->n_past;
}

}  // namespace tandem::serve
