#include "serve/spec/speculator.h"
#include "runtime/elapsed.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "text/sampler.h"

namespace tandem::serve {

namespace {
using Clock = std::chrono::steady_clock;

// The grammar with its forced runs hidden: with forced drafts off, the drafter drafts those
// positions too (the grammar still filters what it proposes).
class WithoutForcing final : public DraftConstraint {
 public:
  explicit WithoutForcing(DraftConstraint& c) : c_(c) {}
  void begin() override { c_.begin(); }
  bool complete() override { return c_.complete(); }
  bool committed_complete() override { return c_.committed_complete(); }
  void forced(std::vector<int32_t>& out) override { out.clear(); }
  bool allows(int32_t t) override { return c_.allows(t); }
  void advance(int32_t t) override { c_.advance(t); }

 private:
  DraftConstraint& c_;
};
}  // namespace

int32_t GreedyPicker::pick(std::span<const float> logits) { return static_cast<int32_t>(text::argmax_first(logits)); }

Speculator::Speculator(StateBackend& backend, SpecConfig cfg) : backend_(backend) { set_config(cfg); }

void Speculator::validate(const SpecConfig& cfg) {
  if (cfg.draft_max < 0 || cfg.draft_max > 16)
    throw std::invalid_argument("speculation: draft_max must be in [0, 16], got " + std::to_string(cfg.draft_max));
  if (cfg.draft_min < 0) throw std::invalid_argument("speculation: draft_min must be >= 0");
  if (!(cfg.p_min >= 0.0f && cfg.p_min <= 1.0f)) throw std::invalid_argument("speculation: p_min must be in [0, 1]");
  if (cfg.forced_max < 0 || cfg.forced_max > 32)
    throw std::invalid_argument("speculation: forced_max must be in [0, 32], got " + std::to_string(cfg.forced_max));
}

void Speculator::set_config(const SpecConfig& cfg) {
  validate(cfg);
  cfg_ = cfg;
}

size_t Speculator::bytes() const { return (drafts_.capacity() + batch_.capacity() + forced_.capacity()) * sizeof(int32_t); }

const std::vector<int32_t>& Speculator::draft(int32_t last, int max_drafts, std::span<const int32_t> context) {
  const auto t0 = Clock::now();
  backend_.draft(last, max_drafts, context, drafts_);
  counters_.draft_ms += ms_since(t0);
  return drafts_;
}

void Speculator::step(int32_t last, TokenPicker& picker, SpecStep& out, const SpecLimits& lim) {
  const int64_t P = backend_.n_past();
  const int64_t n_vocab = backend_.n_vocab();  // 0: the dry run, any id
  const auto in_vocab = [&](int32_t t) { return n_vocab == 0 || (t >= 0 && t < n_vocab); };
  if (!in_vocab(last))
    throw std::invalid_argument("speculation: token id " + std::to_string(last) + " outside the vocabulary [0, " +
                                std::to_string(n_vocab) + ")");
  if (lim.max_tokens < 1) throw std::invalid_argument("speculation: max_tokens must be >= 1");
  if (P >= backend_.n_ctx())
    throw std::length_error("speculation: the context of " + std::to_string(backend_.n_ctx()) + " tokens is full");
  out.tokens.clear();
  out.drafted = out.accepted = out.forced = out.forced_accepted = 0;
  out.verified = out.rolled_back = false;
  ++counters_.steps;

  // 1. Draft.
  drafts_.clear();
  int64_t n_forced = 0;
  if (cfg_.enabled) {
    const int64_t room = std::min({lim.max_tokens - 1, backend_.n_ctx() - P - 1, lim.max_drafts});
    const int64_t k = std::min<int64_t>(cfg_.draft_max, room);  // MTP drafts
    const int64_t k_forced = std::min<int64_t>(std::max(cfg_.draft_max, cfg_.forced_max), room);  // with forced ones
    const auto t0 = Clock::now();
    std::optional<WithoutForcing> unforced;
    if (lim.constraint && !cfg_.forced_drafts) unforced.emplace(*lim.constraint);
    DraftConstraint* c = unforced ? &*unforced : lim.constraint;
    // The grammar's forced run from c's position, up to the step's limit.
    const auto append_forced = [&] {
      if (!c || !cfg_.forced_drafts || static_cast<int64_t>(drafts_.size()) >= k_forced || c->complete()) return;
      c->forced(forced_);
      for (int32_t t : forced_) {
        if (static_cast<int64_t>(drafts_.size()) >= k_forced) break;
        drafts_.push_back(t);
        c->advance(t);
        ++n_forced;
      }
    };
    if (c) c->begin();
    if (!c || !c->complete()) {
      append_forced();
      // The MTP head drafts only from `last`: after a forced run at the start it has no hidden
      // state to chain from, so the step is the forced run alone.
      if (drafts_.empty() && k > 0) {
        backend_.draft(last, static_cast<int>(k), lim.context, drafts_, c);
        append_forced();
      }
    }
    if (static_cast<int>(drafts_.size()) < cfg_.draft_min) drafts_.clear(), n_forced = 0;
    if (hook_) {
      // max_drafts is the MTP limit; a hook may return up to the forced-run limit (the dry run
      // replays logged steps, whose forced runs may be longer).
      hook_(P + 1, last, static_cast<int>(k), drafts_);
      if (static_cast<int64_t>(drafts_.size()) > std::max(k, k_forced))
        throw std::logic_error("speculation: the draft hook returned " + std::to_string(drafts_.size()) +
                               " drafts for a limit of " + std::to_string(std::max(k, k_forced)));
      for (int32_t d : drafts_)
        if (!in_vocab(d)) throw std::logic_error("speculation: the draft hook returned token " + std::to_string(d));
    }
    counters_.draft_ms += ms_since(t0);
  }

  // 2. One pass over [last, d1..dk].
  const int64_t k = static_cast<int64_t>(drafts_.size());
  const int64_t T = k + 1;
  batch_.assign(1, last);
  batch_.insert(batch_.end(), drafts_.begin(), drafts_.end());
  const auto t1 = Clock::now();
  const VerifiedRows rows = backend_.verify(batch_);
  counters_.verify_ms += ms_since(t1);

  // 3. Accept: the target's token at each row, in order; a matching draft continues.
  const auto is_stop = [&](int32_t t) {
    return std::find(lim.stop_tokens.begin(), lim.stop_tokens.end(), t) != lim.stop_tokens.end();
  };
  bool complete_on_draft = false;  // the grammar completed at an accepted draft: no bonus row
  try {
    for (int64_t i = 0; i < T; ++i) {
      const int32_t t = picker.pick(rows.row(i));
      picker.accept(t);
      out.tokens.push_back(t);
      if (i == k || t != drafts_[static_cast<size_t>(i)] || is_stop(t) ||
          static_cast<int64_t>(out.tokens.size()) >= lim.max_tokens)
        break;
      // A complete grammar ends the answer: the rows after it are not picked (nothing is allowed
      // there but an end-of-generation token, which the engine does not need). The drafts up to
      // here were all accepted and fed.
      if (lim.constraint && lim.constraint->committed_complete()) {
        complete_on_draft = true;
        break;
      }
    }
  } catch (...) {
    // The picker failed (a grammar limit): leave the state at P + 1, `last` consumed, as a plain
    // step would have, so that the slot's tokens and its state stay in step.
    if (k > 0) backend_.roll_back(P + 1);
    throw;
  }
  // Drafts accepted (fed and kept): all but the last token, which is the target's next one — or
  // every token when the grammar completed at an accepted draft.
  const int64_t j = static_cast<int64_t>(out.tokens.size()) - (complete_on_draft ? 0 : 1);

  // 4. Roll back to P + 1 + j.
  if (j < k) {
    const auto t2 = Clock::now();
    backend_.roll_back(P + 1 + j);
    counters_.rollback_ms += ms_since(t2);
    out.rolled_back = true;
    ++counters_.roll_backs;
  }
  out.drafted = static_cast<int>(k);
  out.accepted = static_cast<int>(j);
  // The forced run is the last n_forced drafts (a hook may have shortened the list).
  n_forced = std::min(n_forced, k);
  out.forced = static_cast<int>(n_forced);
  out.forced_accepted = static_cast<int>(std::max<int64_t>(0, j - (k - n_forced)));
  counters_.drafts_forced += out.forced;
  counters_.drafts_forced_accepted += out.forced_accepted;
  out.verified = k > 0;
  counters_.verify_passes += k > 0 ? 1 : 0;
  counters_.drafts_proposed += k;
  counters_.drafts_accepted += j;
  counters_.tokens += static_cast<int64_t>(out.tokens.size());
}

}  // namespace tandem::serve
