#include "text/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tandem::text {

int64_t argmax_first(std::span<const float> v) {
  const size_t n = v.size();
  if (n == 0) return 0;
  const float* x = v.data();
  // std::max_element keeps index 0 while nothing compares greater than v[0]: with v[0] NaN, nothing does.
  if (std::isnan(x[0])) return 0;
  // The largest non-NaN value, in 16 independent running maxima (GCC / Clang vectors, 4 wide on
  // every target): every lane starts from x[0] and `a > m ? a : m` never takes a NaN, so the lanes
  // hold the largest value in any order, up to the sign of a zero, which == below does not see.
  typedef float F4 __attribute__((vector_size(16)));
  typedef int32_t I4 __attribute__((vector_size(16)));
  const auto load = [&](size_t i) {
    F4 a;
    std::memcpy(&a, x + i, sizeof a);
    return a;
  };
  const F4 first = {x[0], x[0], x[0], x[0]};
  F4 lane[4] = {first, first, first, first};
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 4; ++j) {
      const F4 a = load(i + 4 * j);
      lane[j] = a > lane[j] ? a : lane[j];
    }
  float m = x[0];
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (const F4& l : lane)
    for (int k = 0; k < 4; ++k) m = l[k] > m ? l[k] : m;
  // Its first position: blocks of 16 without it are passed with one test each.
  const F4 mv = {m, m, m, m};
  for (i = 0; i + 16 <= n; i += 16) {
    const I4 hit = (load(i) == mv) | (load(i + 4) == mv) | (load(i + 8) == mv) | (load(i + 12) == mv);
    if ((hit[0] | hit[1] | hit[2] | hit[3]) != 0) break;
  }
  for (; i < n; ++i)
    if (x[i] == m) return static_cast<int64_t>(i);
  return 0;  // not reached: m is one of the values
}

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
  const bool penalize = history_len_ > 0 &&
                        (p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f);
  // Greedy on the row as it is (no penalty, no mask): the candidates' min_element below picks the
  // largest logit, ties to the lowest id: argmax_first, without copying the row.
  if (p_.temperature <= 0.0f && !penalize && allowed.empty()) return static_cast<int32_t>(argmax_first(logits));
  if (cands_.size() != n) {  // allocates only the first time for this vocabulary size
    cands_.resize(n);
    probs_.reserve(n);
  }
  for (size_t i = 0; i < n; ++i) cands_[i] = Cand{logits[i], static_cast<int32_t>(i)};

  // Penalties: count each token in the window once via a sorted copy (no per-token allocation).
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
