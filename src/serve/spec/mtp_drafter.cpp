#include "serve/spec/mtp_drafter.h"
#include "runtime/elapsed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "text/sampler.h"

namespace tandem::serve {

namespace {
using Clock = std::chrono::steady_clock;

constexpr int kTop = 10;  // llama.cpp's draft sampler keeps the top 10 (spec §7.4)

// The top-10 rows of v, best first (ties: lowest index); returns how many (< 10 for a short v).
int top10(std::span<const float> v, int64_t* idx) {
  int n = 0;
  const auto worse = [&](int64_t a, int64_t b) { return v[a] != v[b] ? v[a] > v[b] : a < b; };  // heap: worst on top
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (n < kTop) {
      idx[n++] = i;
      std::push_heap(idx, idx + n, worse);
    } else if (worse(i, idx[0])) {
      std::pop_heap(idx, idx + n, worse);
      idx[n - 1] = i;
      std::push_heap(idx, idx + n, worse);
    }
  }
  std::sort_heap(idx, idx + n, worse);
  return n;
}

// Probability of candidate `best` after a top-10 cut (llama.cpp's draft sampler, spec §7.4).
float top10_probability(std::span<const float> v, const int64_t* idx, int n, int64_t best) {
  const float m = v[static_cast<size_t>(best)];
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(v[idx[i]]) - m);
  return static_cast<float>(1.0 / sum);
}

// Probability of the best candidate after a top-10 cut.
float top10_probability(std::span<const float> v, int64_t best) {
  int64_t idx[kTop];
  const int n = top10(v, idx);
  return top10_probability(v, idx, n, best);
}

constexpr int64_t kSyncChunk = 512;  // MTP rows replayed per call
}  // namespace

MtpDrafter::MtpDrafter(Qwen35Model& model, const SequenceState& trunk, const SpecConfig& cfg)
    : model_(model), trunk_(trunk), cfg_(cfg), n_embd_(model.hparams().n_embd) {
  if (!model.has_mtp())
    throw std::logic_error("speculative decoding needs an MTP block (this file has nextn_predict_layers = 0)");
  const int64_t n_ctx = trunk.n_ctx();
  mtp_ = model.new_mtp_state(n_ctx);
  tok_.assign(static_cast<size_t>(n_ctx), 0);
  have_tok_.assign(static_cast<size_t>(n_ctx), 0);
  have_hid_.assign(static_cast<size_t>(n_ctx), 0);
  hid_.assign(static_cast<size_t>(n_ctx * n_embd_), 0.0f);
  chain_h_.assign(static_cast<size_t>(n_embd_), 0.0f);
}

bool MtpDrafter::drafting_trimmed() const { return cfg_.trimmed_head && model_.weights().mtp->draft_head.has_value(); }

const WeightMatrix& MtpDrafter::draft_head() const {
  const Qwen35MtpWeights& M = *model_.weights().mtp;
  if (drafting_trimmed()) return *M.draft_head;
  return M.shared_head_head ? *M.shared_head_head : model_.weights().output;
}

void MtpDrafter::configure_prompt_pass(int64_t n_tokens, ForwardOptions& opt) const {
  if (!cfg_.enabled) return;
  opt.hidden = true;
  if (cfg_.retain_prefill_states && n_tokens > 1) {
    opt.rollback_states = cfg_.draft_max + 1;
    opt.gdn = cfg_.rollback_aware_prefill ? GdnAlgorithm::Auto : GdnAlgorithm::Recurrent;
  }
}

void MtpDrafter::invalidate_from(int64_t pos) {
  pos = std::max<int64_t>(0, pos);
  const int64_t n = static_cast<int64_t>(tok_.size());
  if (pos < n) {
    std::fill(have_tok_.begin() + pos, have_tok_.end(), 0);
    std::fill(have_hid_.begin() + pos, have_hid_.end(), 0);
  }
  if (mtp_->n_past > pos) mtp_->truncate(pos);
}

void MtpDrafter::observe_pass(int64_t pos0, std::span<const int32_t> tokens, const ForwardOutput& out) {
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

size_t MtpDrafter::bytes() const {
  return mtp_->bytes() + tok_.capacity() * sizeof(int32_t) + have_tok_.capacity() + have_hid_.capacity() +
         (hid_.capacity() + rows_hid_.capacity() + chain_h_.capacity()) * sizeof(float) +
         rows_tok_.capacity() * sizeof(int32_t) + mout_.bytes();
}

// Replays the trunk rows the MTP head has not seen: row p = (x_p, h[p-1]) (zeros where h is unknown).
void MtpDrafter::sync_mtp(std::span<const int32_t> context) {
  const int64_t P = trunk_.n_past();
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
      // An image row has no token (its placeholder is negative): llama.cpp's MTP skips image rows
      // altogether; here the row keeps its place with token 0 and the image row's hidden, which only
      // shapes the drafts (verification decides every token).
      rows_tok_[t] = tok_[p] >= 0 ? tok_[p] : 0;
      float* h = rows_hid_.data() + t * n_embd_;
      if (p > 0 && have_hid_[p - 1]) std::memcpy(h, hid_.data() + (p - 1) * n_embd_, n_embd_ * sizeof(float));
      else std::fill(h, h + n_embd_, 0.0f);
    }
    model_.mtp_forward(*mtp_, rows_tok_, rows_hid_.data(), LogitsMode::None, mout_);
    counters_.mtp_sync_rows += T;
  }
  counters_.sync_ms += ms_since(t0);
}

void MtpDrafter::draft(int32_t last, int max_drafts, std::span<const int32_t> context, std::vector<int32_t>& drafts,
                       DraftConstraint* constraint) {
  sync_mtp(context);
  const auto t0 = Clock::now();
  drafts.clear();
  const int64_t P = trunk_.n_past();
  if (max_drafts > 0) {
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
    const auto to_token = [&](int64_t r) { return trimmed ? M.draft_token_ids[static_cast<size_t>(r)] : static_cast<int32_t>(r); };
    for (int i = 0; i < max_drafts; ++i) {
      if (constraint) {
        // A position the grammar forces (or where the answer is complete) is the speculator's.
        if (constraint->complete()) break;
        constraint->forced(forced_);
        if (!forced_.empty()) break;
      }
      model_.mtp_forward(*mtp_, std::span<const int32_t>(&tok, 1), chain_h_.data(), LogitsMode::Last, mout_, head);
      const std::span<const float> row(mout_.logits.data(), static_cast<size_t>(mout_.n_vocab));
      int64_t r = -1;
      if (constraint) {
        // The best of the head's top 10 that the grammar allows (none: drafting stops).
        int64_t idx[kTop];
        const int n = top10(row, idx);
        for (int c = 0; c < n && r < 0; ++c)
          if (constraint->allows(to_token(idx[c]))) r = idx[c];
        if (r < 0) break;
        if (cfg_.p_min > 0.0f && top10_probability(row, idx, n, r) < cfg_.p_min) break;
      } else {
        r = text::argmax_first(row);
        if (cfg_.p_min > 0.0f && top10_probability(row, r) < cfg_.p_min) break;
      }
      tok = to_token(r);
      if (constraint) constraint->advance(tok);
      drafts.push_back(tok);
      std::memcpy(chain_h_.data(), mout_.hidden.data(), n_embd_ * sizeof(float));  // the head's own hn chains
    }
    // Row P (last, h[P-1]) is the trunk's row; the chained rows are not.
    if (mtp_->n_past > P + 1) mtp_->truncate(P + 1);
  }
  counters_.draft_ms += ms_since(t0);
}

}  // namespace tandem::serve
