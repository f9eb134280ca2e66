#include "serve/model_backend.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace tandem::serve {

namespace {
struct ModelSaved final : SavedSequence {
  std::unique_ptr<SequenceState> state;
  size_t bytes() const override {
    return state->recurrent_bytes() + static_cast<size_t>(state->n_past()) * state->kv_bytes_per_token();
  }
};
}  // namespace

ModelBackend::ModelBackend(Qwen35Model& model, int64_t n_ctx) : model_(model), state_(model.new_sequence(n_ctx)) {
  opt_.logits = LogitsMode::Last;
}

size_t ModelBackend::sequence_bytes(int64_t n_tokens) const {
  return state_->recurrent_bytes() + static_cast<size_t>(n_tokens) * state_->kv_bytes_per_token();
}

void ModelBackend::set_prompt_tail(int64_t n) {
  if (n < 0) throw std::invalid_argument("ModelBackend: prompt tail must be >= 0 tokens, got " + std::to_string(n));
  prompt_tail_ = n;
}

void ModelBackend::run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
                       std::span<RecurrentCheckpoint> cut_states) {
  if (cut_states.size() != cuts.size()) throw std::invalid_argument("ModelBackend::run: one state per cut expected");
  opt_.logits = want_logits ? LogitsMode::Last : LogitsMode::None;
  opt_.cuts.assign(cuts.begin(), cuts.end());  // keeps its capacity: no allocation when empty
  opt_.hidden = false;
  opt_.gdn = GdnAlgorithm::Auto;
  opt_.rollback_states = 0;
  opt_.column_shared = true;
  opt_.per_token_tail = prompt_tail_;
  if (observer_) observer_->configure_pass(static_cast<int64_t>(tokens.size()), opt_);
  const int64_t pos0 = state_->n_past();
  // Hand the caller's buffers to the pass so that their capacity is reused, then take the
  // filled states back.
  out_.cut_states.resize(cuts.size());
  for (size_t i = 0; i < cuts.size(); ++i) std::swap(out_.cut_states[i].data, cut_states[i].data);
  model_.forward(*state_, tokens, opt_, out_);
  for (size_t i = 0; i < cuts.size(); ++i) {
    cut_states[i].pos = out_.cut_states[i].pos;
    std::swap(out_.cut_states[i].data, cut_states[i].data);
  }
  if (want_logits) logits_ = std::span<const float>(out_.logits.data(), out_.logits.size());
  if (observer_) observer_->observe_pass(pos0, tokens, out_);
}

void ModelBackend::reset() {
  state_->reset();
  if (observer_) observer_->on_truncate(0);
}

void ModelBackend::restore(const RecurrentCheckpoint& cp) {
  state_->restore(cp);
  if (observer_) observer_->on_truncate(cp.pos);
}

std::unique_ptr<SavedSequence> ModelBackend::save_sequence() const {
  auto s = std::make_unique<ModelSaved>();
  // A state sized to what it holds: the prompt cache budget counts these bytes.
  s->state = model_.new_sequence(std::max<int64_t>(1, state_->n_past()));
  s->state->copy_from(*state_);
  return s;
}

void ModelBackend::load_sequence(const SavedSequence& saved) {
  const auto* s = dynamic_cast<const ModelSaved*>(&saved);
  if (!s) throw std::invalid_argument("ModelBackend::load_sequence: the sequence was saved by another backend");
  state_->copy_from(*s->state);
  if (observer_) observer_->on_replace();
}

}  // namespace tandem::serve
