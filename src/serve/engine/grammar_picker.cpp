#include "serve/engine/grammar_picker.h"
#include "runtime/elapsed.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace tandem::serve {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

int32_t GrammarPicker::picked(std::span<const float> logits, int32_t t) {
  if (record_) {
    const size_t n = n_vocab_ > 0 ? std::min(logits.size(), static_cast<size_t>(n_vocab_)) : logits.size();
    logprobs_.push_back(token_logprob(logits.first(n), t, n_top_));
  }
  return t;
}

int32_t GrammarPicker::pick(std::span<const float> logits) {
  if (!m_) return picked(logits, s_.sample(logits));
  if (logits.empty()) return 0;  // the dry run has no logits (and no grammar work to do)
  if (s_.greedy()) {
    const int32_t t = s_.sample(logits);  // greedy draws nothing from the random stream
    const auto t0 = Clock::now();
    const bool legal = m_->allows(t);
    grammar_ms_ += ms_since(t0);
    if (legal) return picked(logits, t);
    ++interventions_;
  }
  const auto t0 = Clock::now();
  const std::shared_ptr<const grammar::TokenMask> mask = m_->mask();
  grammar_ms_ += ms_since(t0);
  const int32_t t = s_.sample(logits, mask->bits);
  if (t < 0) throw std::runtime_error("grammar: no token of the vocabulary is allowed here");
  return picked(logits, t);
}

void GrammarPicker::accept(int32_t token) {
  s_.accept(token);
  if (!m_) return;
  const auto t0 = Clock::now();
  const bool ok = m_->accept(token);
  grammar_ms_ += ms_since(t0);
  if (!ok) throw std::logic_error("grammar: token " + std::to_string(token) + " was picked but the grammar rejects it");
}

}  // namespace tandem::serve
