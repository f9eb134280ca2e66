#include "serve/backend/model_backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "serve/spec/mtp_drafter.h"

namespace tandem::serve {

namespace {
constexpr std::string_view kModelKind = "model";

struct ModelSaved final : SavedSequence {
  std::unique_ptr<SequenceState> state;
  size_t bytes() const override {
    return state->recurrent_bytes() + static_cast<size_t>(state->n_past()) * state->kv_bytes_per_token();
  }
  int64_t n_tokens() const override { return state->n_past(); }
  std::string_view kind() const override { return kModelKind; }
  void write(BinaryWriter& w) const override {
    w.pod<int64_t>(state->n_past());  // read_sequence sizes the state before reading it
    state->write(w);
  }
};
}  // namespace

static_assert(ModelBackend::kDefaultPromptTail == SpecConfig{}.draft_max,
              "a plain slot's prompt tail is the default draft length (ModelBackend::set_prompt_tail)");

ModelBackend::ModelBackend(HybridModel& model, int64_t n_ctx) : ModelBackend(model, model.new_sequence(n_ctx)) {}

ModelBackend::ModelBackend(HybridModel& model, std::unique_ptr<SequenceState> state)
    : model_(model), n_ctx_(state ? state->n_ctx() : 0), state_(std::move(state)) {
  if (!state_) throw std::invalid_argument("ModelBackend: a sequence state is required");
  opt_.logits = LogitsMode::Last;
}

ModelBackend::~ModelBackend() = default;

size_t ModelBackend::sequence_bytes(int64_t n_tokens) const {
  return state_->recurrent_bytes() + static_cast<size_t>(n_tokens) * state_->kv_bytes_per_token();
}

void ModelBackend::set_prompt_tail(int64_t n) {
  if (n < 0) throw std::invalid_argument("ModelBackend: prompt tail must be >= 0 tokens, got " + std::to_string(n));
  prompt_tail_ = n;
}

void ModelBackend::configure_prompt_pass(int64_t n, std::span<const int64_t> cuts, bool want_logits) {
  opt_.logits = want_logits ? LogitsMode::Last : LogitsMode::None;
  opt_.cuts.assign(cuts.begin(), cuts.end());  // keeps its capacity: no allocation when empty
  opt_.hidden = false;
  opt_.gdn = GdnAlgorithm::Auto;
  opt_.rollback_states = 0;
  opt_.column_shared = true;
  opt_.per_token_tail = prompt_tail_;
  if (drafter_) drafter_->configure_prompt_pass(n, opt_);
}

template <typename Pass>
void ModelBackend::run_pass(std::span<RecurrentCheckpoint> cut_states, bool want_logits, Pass&& pass) {
  // Hand the caller's buffers to the pass so that their capacity is reused, then take the
  // filled states back.
  out_.cut_states.resize(cut_states.size());
  for (size_t i = 0; i < cut_states.size(); ++i) std::swap(out_.cut_states[i].data, cut_states[i].data);
  verify_pos0_ = -1;
  pass();
  for (size_t i = 0; i < cut_states.size(); ++i) {
    cut_states[i].pos = out_.cut_states[i].pos;
    std::swap(out_.cut_states[i].data, cut_states[i].data);
  }
  if (want_logits) logits_ = std::span<const float>(out_.logits.data(), out_.logits.size());
}

void ModelBackend::run(std::span<const int32_t> tokens, std::span<const int64_t> cuts, bool want_logits,
                       std::span<RecurrentCheckpoint> cut_states) {
  if (cut_states.size() != cuts.size()) throw std::invalid_argument("ModelBackend::run: one state per cut expected");
  configure_prompt_pass(static_cast<int64_t>(tokens.size()), cuts, want_logits);
  const int64_t pos0 = state_->n_past();
  run_pass(cut_states, want_logits, [&] { model_.forward(*state_, tokens, opt_, out_); });
  if (drafter_) drafter_->observe_pass(pos0, tokens, out_);
}

void ModelBackend::run_image(const ImageRowsPiece& piece, std::span<const int64_t> cuts, bool want_logits,
                             std::span<RecurrentCheckpoint> cut_states) {
  if (cut_states.size() != cuts.size()) throw std::invalid_argument("ModelBackend::run_image: one state per cut expected");
  configure_prompt_pass(piece.n_rows, cuts, want_logits);
  const int64_t pos0 = state_->n_past();
  const EmbeddingRows rows{piece.rows, piece.n_rows, piece.nx, piece.ny, piece.first_row};
  run_pass(cut_states, want_logits, [&] { model_.forward_image(*state_, rows, opt_, out_); });
  if (drafter_) {
    // The drafter records the rows' placeholders (and their hidden rows): its MTP rows for an
    // image use a stand-in token (MtpDrafter::sync_mtp).
    placeholders_.assign(static_cast<size_t>(piece.n_rows), piece.placeholder);
    drafter_->observe_pass(pos0, placeholders_, out_);
  }
}

void ModelBackend::reset() {
  verify_pos0_ = -1;
  state_->reset();
  if (drafter_) drafter_->invalidate_from(0);
}

void ModelBackend::restore(const RecurrentCheckpoint& cp) {
  verify_pos0_ = -1;
  state_->restore(cp);
  if (drafter_) drafter_->invalidate_from(cp.pos);
}

std::unique_ptr<SavedSequence> ModelBackend::save_sequence() const {
  auto s = std::make_unique<ModelSaved>();
  // A state sized to what it holds: the prompt cache budget counts these bytes.
  s->state = model_.new_sequence(std::max<int64_t>(1, state_->n_past()));
  s->state->copy_from(*state_);
  return s;
}

void ModelBackend::load_sequence(const SavedSequence& saved) {
  if (saved.kind() != kModelKind)
    throw std::invalid_argument("ModelBackend::load_sequence: the sequence was saved by another backend (" +
                                std::string(saved.kind()) + ")");
  load_state(*static_cast<const ModelSaved&>(saved).state);
}

std::string ModelBackend::state_layout() const {
  return model_.architecture() + ": recurrent " + std::to_string(state_->recurrent_floats()) + " floats (conv " +
         std::to_string(state_->conv_floats()) + ", scan " + std::to_string(state_->ssm_floats()) + " per layer), KV " +
         std::to_string(state_->kv_bytes_per_token()) + " bytes per row (rows of " + std::to_string(state_->kv_dim()) + ")";
}

std::unique_ptr<SavedSequence> ModelBackend::read_sequence(BinaryReader& r) const {
  const auto n_past = r.pod<int64_t>();
  if (n_past < 0 || n_past > n_ctx_)
    r.fail("a saved sequence of " + std::to_string(n_past) + " tokens does not fit the context of " +
           std::to_string(n_ctx_));
  auto s = std::make_unique<ModelSaved>();
  s->state = model_.new_sequence(std::max<int64_t>(1, n_past));
  s->state->read(r);
  if (s->state->n_past() != n_past) r.fail("the saved sequence's length disagrees with its header (corrupted)");
  return s;
}

void ModelBackend::release_memory() {
  if (state_->n_ctx() == 1 && n_ctx_ != 1) return;  // released already
  verify_pos0_ = -1;
  state_ = model_.new_sequence(1);  // the KV cache goes; a one-row state keeps every accessor valid
  if (drafter_) drafter_->invalidate_from(0);
}

void ModelBackend::reacquire_memory() {
  if (state_->n_ctx() == n_ctx_) return;
  state_ = model_.new_sequence(n_ctx_);
  if (drafter_) drafter_->invalidate_from(0);
}

void ModelBackend::load_state(const SequenceState& from) {
  verify_pos0_ = -1;
  state_->copy_from(from);
  if (drafter_) drafter_->invalidate_from(0);  // another sequence's: nothing the head holds is known to match
}

void ModelBackend::start_speculation(const SpecConfig& cfg) {
  // Without the MTP head (mtp_drafts off, or a file without the block) only a grammar drafts:
  // verification and roll-back need no drafter.
  if (cfg.mtp_drafts) {
    Qwen35Model* mtp = model_.mtp_model();
    if (!mtp) throw std::logic_error("speculation: MTP drafts asked of a " + model_.architecture() + " model without a draft head");
    if (!drafter_) drafter_ = std::make_unique<MtpDrafter>(*mtp, *state_, cfg);
    drafter_->set_config(cfg);
  } else {
    drafter_.reset();
  }
  spec_ = cfg;
  speculating_ = true;
}

void ModelBackend::stop_speculation() {
  speculating_ = false;
  drafter_.reset();
  vout_ = ForwardOutput{};  // the verification pass's rows, log and states: gone with speculation
  verify_pos0_ = -1;
}

void ModelBackend::draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
                         DraftConstraint* constraint) {
  if (!speculating_) throw std::logic_error("ModelBackend::draft: speculation is not started");
  drafts.clear();
  if (drafter_) drafter_->draft(last, max_drafts, context, drafts, constraint);  // none: grammar-forced drafts only
}

VerifiedRows ModelBackend::verify(std::span<const int32_t> tokens) {
  if (!speculating_) throw std::logic_error("ModelBackend::verify: speculation is not started");
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) throw std::invalid_argument("ModelBackend::verify: no tokens");
  // One trunk pass over [last, d1..dk]: every row's logits and hidden, and what a rollback needs:
  // a replay log (default) or the states after each row. Every token per token, as k + 1 decode
  // steps would run them: the rows' logits are then bit-identical to plain decoding (Auto would
  // run the first token as a one-token chunk). A single token is a plain pass.
  const int64_t pos0 = state_->n_past();
  verify_pos0_ = -1;
  if (T > 1 && spec_.replay_rollback) {  // only where the model keeps_replay_log (Engine decides)
    lopt_.logits = LogitsMode::All;
    lopt_.hidden = drafter_ != nullptr;
    lopt_.column_shared = spec_.column_shared_verify;
    model_.forward_logged(*state_, tokens, lopt_, vout_);
  } else {
    vopt_.cuts.clear();
    vopt_.logits = T > 1 ? LogitsMode::All : LogitsMode::Last;
    vopt_.hidden = drafter_ != nullptr;
    vopt_.rollback_states = T > 1 ? static_cast<int>(T) : 0;
    vopt_.rollback_live = false;  // accepting every draft keeps the live state: slot 0 is never used
    vopt_.gdn = GdnAlgorithm::Recurrent;
    vopt_.column_shared = spec_.column_shared_verify;
    model_.forward(*state_, tokens, vopt_, vout_);
  }
  if (drafter_) drafter_->observe_pass(pos0, tokens, vout_);
  verify_pos0_ = pos0;
  verify_n_ = T;
  if (T > 1) ++spec_counts_.verify_passes;
  return VerifiedRows{vout_.logits.data(), T > 1 ? T : 1, vout_.n_vocab};
}

// Back to pos = P + 1 + j (j drafts accepted): the KV truncated and the recurrent state of that
// position, recomputed from the pass's replay log (j + 1 token updates) or copied from its snapshot.
void ModelBackend::roll_back(int64_t pos) {
  if (verify_pos0_ < 0 || pos <= verify_pos0_ || pos >= verify_pos0_ + verify_n_)
    throw std::logic_error("ModelBackend::roll_back: position " + std::to_string(pos) +
                           " is not inside the last verification pass");
  if (spec_.replay_rollback) {
    model_.roll_back(*state_, vout_, pos);
  } else {
    const RecurrentCheckpoint& rb = vout_.rollback_states[static_cast<size_t>(verify_pos0_ + verify_n_ - pos)];
    if (rb.pos != pos) throw std::logic_error("speculation: rollback state at the wrong position");
    state_->truncate_kv(pos);
    state_->set_recurrent(rb.data.data());
  }
  verify_pos0_ = -1;
  if (drafter_) drafter_->invalidate_from(pos);
  ++spec_counts_.roll_backs;
}

size_t ModelBackend::speculation_bytes() const { return (drafter_ ? drafter_->bytes() : 0) + vout_.bytes(); }

}  // namespace tandem::serve
