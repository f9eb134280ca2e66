#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::text {

Sampler::Sampler(SamplerParams p) : p_(p), rng_state_(p.seed) {
  history_.resize(static_cast<size_t>(std::max(0, p_.penalty_last_n)));
  recent_.reserve(history_.size());
}

void Sampler::reset() {
  rng_state_ = p_.seed;
  history_pos_ = history_len_ = 0;
}

double Sampler::uniform() {
  // splitmix64: tiny, fast and fully specified (std:: distributions are not portable).
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

void Sampler::accept(int32_t token) {
  if (history_.empty()) return;
  history_[history_pos_] = token;
  history_pos_ = (history_pos_ + 1) % history_.size();
  history_len_ = std::min(history_len_ + 1, history_.size());
}

int32_t Sampler::sample(std::span<const float> logits) { return sample(logits, {}); }

int32_t Sampler::sample(std::span<const float> logits, std::span<const uint64_t> allowed) {
  const size_t n_vocab = logits.size();
  if (n_vocab == 0) return -1;
  const size_t n = n_vocab;
  if (cands_.size() != n) {  // allocates only the first time for this vocabulary size
    cands_.resize(n);
    probs_.reserve(n);
  }
  for (size_t i = 0; i < n; ++i) cands_[i] = Cand{logits[i], static_cast<int32_t>(i)};

  // Penalties: count each token in the window once via a sorted copy (no per-token allocation).
  const bool penalize = history_len_ > 0 &&
                        (p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f);
  if (penalize) {
    recent_.assign(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(history_len_));
    std::sort(recent_.begin(), recent_.end());
    for (size_t i = 0; i < recent_.size();) {
      size_t j = i;
      while (j < recent_.size() && recent_[j] == recent_[i]) ++j;
      const int32_t tok = recent_[i];
      if (tok >= 0 && static_cast<size_t>(tok) < n) {
        float& l = cands_[static_cast<size_t>(tok)].logit;
        if (p_.repeat_penalty != 1.0f) l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
        l -= static_cast<float>(j - i) * p_.frequency_penalty + p_.presence_penalty;
      }
      i = j;
    }
  }

  // A grammar's mask: only the allowed candidates go on (in id order, so that ties still break to
  // the lowest id), after the penalties, which index candidates by id.
  size_t m = n;
  if (!allowed.empty()) {
    m = 0;
    for (size_t i = 0; i < n; ++i) {
      const size_t w = i >> 6;
      if (w < allowed.size() && ((allowed[w] >> (i & 63)) & 1u)) cands_[m++] = cands_[i];
    }
    if (m == 0) return -1;
  }
  const auto first = cands_.begin(), last = cands_.begin() + static_cast<std::ptrdiff_t>(m);

  auto by_logit = [](const Cand& a, const Cand& b) { return a.logit != b.logit ? a.logit > b.logit : a.id < b.id; };
  if (p_.temperature <= 0.0f) {
    return std::min_element(first, last, by_logit)->id;  // greedy: lowest id on ties
  }

  // top-k: keep the k best (sorted). Without top-k the whole vocabulary is sorted once.
  size_t keep = m;
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < m) keep = static_cast<size_t>(p_.top_k);
  std::partial_sort(first, first + static_cast<std::ptrdiff_t>(keep), last, by_logit);

  // Softmax over the kept candidates (at temperature 1, as llama.cpp's top-p/min-p see them).
  probs_.resize(keep);
  const float max_l = cands_[0].logit;
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += probs_[i] = std::exp(cands_[i].logit - max_l);

  // top-p: smallest prefix whose probability mass reaches top_p.
  if (p_.top_p < 1.0f) {
    double acc = 0;
    for (size_t i = 0; i < keep; ++i) {
      acc += probs_[i] / sum;
      if (acc >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // min-p: drop candidates below min_p times the best one's probability.
  if (p_.min_p > 0.0f) {
    size_t k = 1;
    while (k < keep && probs_[k] >= p_.min_p * probs_[0]) ++k;
    keep = k;
  }

  // Temperature, then draw.
  const double inv_t = 1.0 / p_.temperature;
  sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += probs_[i] = std::exp((cands_[i].logit - max_l) * inv_t);
  const double r = uniform() * sum;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (r < acc) return cands_[i].id;
  }
  return cands_[keep - 1].id;
}

}  // namespace tandem::text
