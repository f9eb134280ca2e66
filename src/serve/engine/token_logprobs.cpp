#include "serve/engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::serve {

TokenLogprob token_logprob(std::span<const float> logits, int32_t picked, int n_top) {
  TokenLogprob r;
  r.token = picked;
  if (logits.empty()) return r;
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : logits) mx = std::max(mx, v);
  double sum = 0;  // double: 150k terms
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double log_z = static_cast<double>(mx) + std::log(sum);
  const auto lp = [&](int32_t id) { return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z); };
  if (picked >= 0 && static_cast<size_t>(picked) < logits.size()) r.logprob = lp(picked);
  const int n = std::min<int>(std::max(0, n_top), static_cast<int>(logits.size()));
  if (n == 0) return r;
  // A bounded min-heap of the n best (value, then lower id first).
  const auto better = [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
           (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  };
  std::vector<int32_t> heap;
  heap.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    if (static_cast<int>(heap.size()) < n) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(i, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = i;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  r.top.reserve(heap.size());
  for (int32_t id : heap) r.top.emplace_back(id, lp(id));
  return r;
}

}  // namespace tandem::serve
