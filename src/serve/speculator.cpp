#include "serve/speculator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tandem::serve {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int64_t argmax(std::span<const float> v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

// Probability of the best candidate after a top-10 cut (llama.cpp's draft sampler, spec §7.4).
float top10_probability(std::span<const float> v, int64_t best) {
  constexpr int kTop = 10;
  float top[kTop];
  int n = 0;
  for (float x : v) {
    if (n < kTop) {
      top[n++] = x;
      std::push_heap(top, top + n, std::greater<float>());
    } else if (x > top[0]) {
      std::pop_heap(top, top + n, std::greater<float>());
      top[n - 1] = x;
      std::push_heap(top, top + n, std::greater<float>());
    }
  }
  const float m = v[static_cast<size_t>(best)];
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(top[i]) - m);
  return static_cast<float>(1.0 / sum);
}

constexpr int64_t kSyncChunk = 512;  // MTP rows replayed per call
}  // namespace

int32_t GreedyPicker::pick(std::span<const float> logits) { return static_cast<int32_t>(argmax(logits)); }

Speculator::Speculator(Qwen35Model& model, SequenceState& state, SpecConfig cfg)
    : model_(model), state_(state), n_embd_(model.hparams().n_embd) {
  if (!model.has_mtp())
    throw std::logic_error("speculative decoding needs an MTP block (this file has nextn_predict_layers = 0)");
  set_config(cfg);
  const int64_t n_ctx = state.n_ctx();
  mtp_ = model.new_mtp_state(n_ctx);
  tok_.assign(static_cast<size_t>(n_ctx), 0);
  have_tok_.assign(static_cast<size_t>(n_ctx), 0);
  have_hid_.assign(static_cast<size_t>(n_ctx), 0);
  hid_.assign(static_cast<size_t>(n_ctx * n_embd_), 0.0f);
  chain_h_.assign(static_cast<size_t>(n_embd_), 0.0f);
}

void Speculator::set_config(const SpecConfig& cfg) {
  if (cfg.draft_max < 0 || cfg.draft_max > 16)
    throw std::invalid_argument("speculation: draft_max must be in [0, 16], got " + std::to_string(cfg.draft_max));
  if (cfg.draft_min < 0) throw std::invalid_argument("speculation: draft_min must be >= 0");
  if (!(cfg.p_min >= 0.0f && cfg.p_min <= 1.0f)) throw std::invalid_argument("speculation: p_min must be in [0, 1]");
  cfg_ = cfg;
}

bool Speculator::drafting_trimmed() const { return cfg_.trimmed_head && model_.weights().mtp->draft_head.has_value(); }

const WeightMatrix& Speculator::draft_head() const {
  const Qwen35MtpWeights& M = *model_.weights().mtp;
  if (drafting_trimmed()) return *M.draft_head;
  return M.shared_head_head ? *M.shared_head_head : model_.weights().output;
}

static_assert(ModelBackend::kDefaultPromptTail == SpecConfig{}.draft_max,
              "a plain slot's prompt tail is the default draft length (ModelBackend::set_prompt_tail)");

void Speculator::configure_pass(int64_t n_tokens, ForwardOptions& opt) {
  if (!cfg_.enabled) return;
  opt.hidden = true;
  if (cfg_.retain_prefill_states && n_tokens > 1) {
    opt.rollback_states = cfg_.draft_max + 1;
    opt.gdn = cfg_.rollback_aware_prefill ? GdnAlgorithm::Auto : GdnAlgorithm::Recurrent;
  }
}

void Speculator::invalidate_from(int64_t pos) {
  pos = std::max<int64_t>(0, pos);
  const int64_t n = static_cast<int64_t>(tok_.size());
  if (pos < n) {
    std::fill(have_tok_.begin() + pos, have_tok_.end(), 0);
    std::fill(have_hid_.begin() + pos, have_hid_.end(), 0);
  }
  if (mtp_->n_past > pos) mtp_->truncate(pos);
}

void Speculator::observe_pass(int64_t pos0, std::span<const int32_t> tokens, const ForwardOutput& out) {
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) return;
  // MTP row p is (x_p, h[p-1]): row pos0 stays valid if its token is unchanged, later rows do not.
  const bool same_first = have_tok_[pos0] && tok_[pos0] == tokens[0];
  const int64_t valid = pos0 + (same_first ? 1 : 0);
  if (mtp_->n_past > valid) mtp_->truncate(valid);
  const bool hidden = static_cast<int64_t>(out.hidden.size()) >= T * n_embd_;
  for (int64_t t = 0; t < T; ++t) {
    const size_t p = static_cast<size_t>(pos0 + t);
    tok_[p] = tokens[t];
    have_tok_[p] = 1;
    have_hid_[p] = hidden ? 1 : 0;
  }
  if (hidden) std::memcpy(hid_.data() + pos0 * n_embd_, out.hidden.data(), static_cast<size_t>(T * n_embd_) * sizeof(float));
  const int64_t end = pos0 + T;
  if (end < static_cast<int64_t>(tok_.size())) {
    std::fill(have_tok_.begin() + end, have_tok_.end(), 0);
    std::fill(have_hid_.begin() + end, have_hid_.end(), 0);
  }
}

size_t Speculator::bytes() const {
  return mtp_->bytes() + tok_.capacity() * sizeof(int32_t) + have_tok_.capacity() + have_hid_.capacity() +
         (hid_.capacity() + rows_hid_.capacity() + chain_h_.capacity()) * sizeof(float) +
         (drafts_.capacity() + batch_.capacity() + rows_tok_.capacity()) * sizeof(int32_t) + vout_.bytes() +
         mout_.bytes();
}

void Speculator::on_truncate(int64_t pos) { invalidate_from(pos); }

void Speculator::on_replace() { invalidate_from(0); }

// Replays the trunk rows the MTP head has not seen: row p = (x_p, h[p-1]) (zeros where h is unknown).
void Speculator::sync_mtp(std::span<const int32_t> context) {
  const int64_t P = state_.n_past();
  const auto t0 = Clock::now();
  while (mtp_->n_past < P) {
    const int64_t p0 = mtp_->n_past, T = std::min(kSyncChunk, P - p0);
    rows_tok_.resize(static_cast<size_t>(T));
    rows_hid_.resize(static_cast<size_t>(T * n_embd_));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = p0 + t;
      if (!have_tok_[p]) {
        if (p >= static_cast<int64_t>(context.size()))
          throw std::logic_error("speculation: the token at position " + std::to_string(p) +
                                 " is unknown (the state was replaced); pass the context tokens");
        tok_[p] = context[p];
        have_tok_[p] = 1;
      }
      rows_tok_[t] = tok_[p];
      float* h = rows_hid_.data() + t * n_embd_;
      if (p > 0 && have_hid_[p - 1]) std::memcpy(h, hid_.data() + (p - 1) * n_embd_, n_embd_ * sizeof(float));
      else std::fill(h, h + n_embd_, 0.0f);
    }
    model_.mtp_forward(*mtp_, rows_tok_, rows_hid_.data(), LogitsMode::None, mout_);
    counters_.mtp_sync_rows += T;
  }
  counters_.sync_ms += ms_since(t0);
}

void Speculator::run_drafts(int32_t last, int max_drafts) {
  drafts_.clear();
  const int64_t P = state_.n_past();
  if (max_drafts <= 0) return;
  if (mtp_->n_past > P) mtp_->truncate(P);  // a previous draft from this position: redo its row
  const bool trimmed = drafting_trimmed();
  const Qwen35MtpWeights& M = *model_.weights().mtp;
  const WeightMatrix* head = trimmed ? &*M.draft_head : nullptr;
  if (P > 0 && have_hid_[P - 1]) std::memcpy(chain_h_.data(), hid_.data() + (P - 1) * n_embd_, n_embd_ * sizeof(float));
  else std::fill(chain_h_.begin(), chain_h_.end(), 0.0f);
  // Row P is (last, h[P-1]), the row the trunk's next pass will give it: it is kept.
  tok_[static_cast<size_t>(P)] = last;
  have_tok_[static_cast<size_t>(P)] = 1;
  int32_t tok = last;
  for (int i = 0; i < max_drafts; ++i) {
    model_.mtp_forward(*mtp_, std::span<const int32_t>(&tok, 1), chain_h_.data(), LogitsMode::Last, mout_, head);
    const std::span<const float> row(mout_.logits.data(), static_cast<size_t>(mout_.n_vocab));
    const int64_t r = argmax(row);
    if (cfg_.p_min > 0.0f && top10_probability(row, r) < cfg_.p_min) break;
    tok = trimmed ? M.draft_token_ids[static_cast<size_t>(r)] : static_cast<int32_t>(r);
    drafts_.push_back(tok);
    std::memcpy(chain_h_.data(), mout_.hidden.data(), n_embd_ * sizeof(float));  // the head's own hn chains
  }
  // Row P (last, h[P-1]) is the trunk's row; the chained rows are not.
  if (mtp_->n_past > P + 1) mtp_->truncate(P + 1);
}

const std::vector<int32_t>& Speculator::draft(int32_t last, int max_drafts, std::span<const int32_t> context) {
  sync_mtp(context);
  const auto t0 = Clock::now();
  run_drafts(last, max_drafts);
  counters_.draft_ms += ms_since(t0);
  return drafts_;
}

void Speculator::step(int32_t last, TokenPicker& picker, SpecStep& out, const SpecLimits& lim) {
  const Qwen35HParams& hp = model_.hparams();
  const int64_t P = state_.n_past();
  if (last < 0 || last >= hp.n_vocab)
    throw std::invalid_argument("speculation: token id " + std::to_string(last) + " outside the vocabulary [0, " +
                                std::to_string(hp.n_vocab) + ")");
  if (lim.max_tokens < 1) throw std::invalid_argument("speculation: max_tokens must be >= 1");
  if (P >= state_.n_ctx())
    throw std::length_error("speculation: the context of " + std::to_string(state_.n_ctx()) + " tokens is full");
  out.tokens.clear();
  out.drafted = out.accepted = 0;
  out.verified = false;
  ++counters_.steps;

  // 1. Draft.
  drafts_.clear();
  if (cfg_.enabled) {
    const int64_t k = std::min<int64_t>({cfg_.draft_max, lim.max_tokens - 1, state_.n_ctx() - P - 1});
    sync_mtp(lim.context);
    const auto t0 = Clock::now();
    run_drafts(last, static_cast<int>(k));
    if (static_cast<int>(drafts_.size()) < cfg_.draft_min) drafts_.clear();
    if (hook_) {
      hook_(P + 1, last, static_cast<int>(k), drafts_);
      if (static_cast<int64_t>(drafts_.size()) > k)
        throw std::logic_error("speculation: the draft hook returned " + std::to_string(drafts_.size()) +
                               " drafts for a limit of " + std::to_string(k));
      for (int32_t d : drafts_)
        if (d < 0 || d >= hp.n_vocab) throw std::logic_error("speculation: the draft hook returned token " + std::to_string(d));
    }
    counters_.draft_ms += ms_since(t0);
  }

  // 2. One trunk pass over [last, d1..dk]: every row's logits and hidden, the last k+1 states.
  const int64_t k = static_cast<int64_t>(drafts_.size());
  const int64_t T = k + 1;
  batch_.assign(1, last);
  batch_.insert(batch_.end(), drafts_.begin(), drafts_.end());
  vopt_.cuts.clear();
  vopt_.logits = k > 0 ? LogitsMode::All : LogitsMode::Last;
  vopt_.hidden = cfg_.enabled;
  vopt_.rollback_states = k > 0 ? static_cast<int>(T) : 0;
  vopt_.rollback_live = false;  // accepting every draft keeps the live state: slot 0 is never used
  vopt_.rollback_mode = cfg_.replay_rollback ? RollbackMode::Replay : RollbackMode::Snapshots;
  // Every token per token, as k + 1 decode steps would run them: the rows' logits are then
  // bit-identical to plain decoding (Auto would run the first token as a one-token chunk).
  vopt_.gdn = GdnAlgorithm::Recurrent;
  vopt_.column_shared = cfg_.column_shared_verify;
  const auto t1 = Clock::now();
  model_.forward(state_, batch_, vopt_, vout_);
  observe_pass(P, batch_, vout_);
  counters_.verify_ms += ms_since(t1);

  // 3. Accept: the target's token at each row, in order; a matching draft continues.
  const auto is_stop = [&](int32_t t) {
    return std::find(lim.stop_tokens.begin(), lim.stop_tokens.end(), t) != lim.stop_tokens.end();
  };
  for (int64_t i = 0; i < T; ++i) {
    const std::span<const float> row(vout_.logits_row(static_cast<size_t>(i)), static_cast<size_t>(vout_.n_vocab));
    const int32_t t = picker.pick(row);
    picker.accept(t);
    out.tokens.push_back(t);
    if (i == k || t != drafts_[static_cast<size_t>(i)] || is_stop(t) ||
        static_cast<int64_t>(out.tokens.size()) >= lim.max_tokens)
      break;
  }
  const int64_t j = static_cast<int64_t>(out.tokens.size()) - 1;  // drafts accepted (fed and kept)

  // 4. Roll back to P + 1 + j: the KV truncated and the recurrent state of that position,
  //    recomputed from the pass's replay log (j + 1 token updates) or copied from its snapshot.
  if (j < k) {
    const auto t2 = Clock::now();
    if (cfg_.replay_rollback) {
      model_.roll_back(state_, vout_, P + 1 + j);
    } else {
      const RecurrentCheckpoint& rb = vout_.rollback_states[static_cast<size_t>(k - j)];
      if (rb.pos != P + 1 + j) throw std::logic_error("speculation: rollback state at the wrong position");
      state_.truncate_kv(P + 1 + j);
      state_.set_recurrent(rb.data.data());
    }
    invalidate_from(P + 1 + j);
    counters_.rollback_ms += ms_since(t2);
  }
  out.drafted = static_cast<int>(k);
  out.accepted = static_cast<int>(j);
  out.verified = k > 0;
  counters_.verify_passes += k > 0 ? 1 : 0;
  counters_.drafts_proposed += k;
  counters_.drafts_accepted += j;
  counters_.tokens += static_cast<int64_t>(out.tokens.size());
}

}  // namespace tandem::serve
