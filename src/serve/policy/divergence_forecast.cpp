#include "serve/policy/divergence_forecast.h"

#include <algorithm>

namespace tandem::serve {

namespace {

constexpr uint64_t kBase = 0x100000001b3ull;

// Polynomial rolling hash of every m-token run starting in [from, |t| - m], sorted by hash.
void hash_runs(std::span<const int32_t> t, int64_t from, int64_t m, std::vector<std::pair<uint64_t, int64_t>>& out) {
  out.clear();
  const int64_t n = static_cast<int64_t>(t.size());
  if (from < 0 || n - from < m) return;
  uint64_t top = 1;  // kBase^(m-1)
  for (int64_t k = 1; k < m; ++k) top *= kBase;
  uint64_t h = 0;
  for (int64_t k = 0; k < m; ++k) h = h * kBase + static_cast<uint32_t>(t[from + k]);
  out.emplace_back(h, from);
  for (int64_t s = from + 1; s + m <= n; ++s) {
    h = (h - static_cast<uint32_t>(t[s - 1]) * top) * kBase + static_cast<uint32_t>(t[s + m - 1]);
    out.emplace_back(h, s);
  }
  std::sort(out.begin(), out.end());
}

// The start of the run with this hash if exactly one run has it, else -1.
int64_t unique_start(const std::vector<std::pair<uint64_t, int64_t>>& runs, uint64_t h) {
  auto it = std::lower_bound(runs.begin(), runs.end(), std::pair<uint64_t, int64_t>{h, INT64_MIN});
  if (it == runs.end() || it->first != h) return -1;
  if (it + 1 != runs.end() && (it + 1)->first == h) return -1;
  return it->second;
}

}  // namespace

std::optional<int64_t> DivergenceForecast::predict(std::span<const int32_t> previous, std::span<const int32_t> current,
                                                   int64_t L) {
  const int64_t m = opt_.run, np = static_cast<int64_t>(previous.size()), nc = static_cast<int64_t>(current.size());
  if (m < 1 || L < 0 || L >= np || L >= nc) return std::nullopt;
  hash_runs(previous, L, m, prev_runs_);
  hash_runs(current, L, m, cur_runs_);
  if (prev_runs_.empty() || cur_runs_.empty()) return std::nullopt;
  // Walk the current prompt in position order with the same rolling hash.
  uint64_t top = 1;
  for (int64_t k = 1; k < m; ++k) top *= kBase;
  uint64_t h = 0;
  for (int64_t k = 0; k < m; ++k) h = h * kBase + static_cast<uint32_t>(current[L + k]);
  const int64_t last = std::min(L + opt_.max_span, nc - m);
  for (int64_t i = L; i <= last; ++i) {
    if (i > L) h = (h - static_cast<uint32_t>(current[i - 1]) * top) * kBase + static_cast<uint32_t>(current[i + m - 1]);
    const int64_t j = unique_start(prev_runs_, h);
    if (j < 0 || j > L + opt_.max_span || unique_start(cur_runs_, h) != i) continue;
    if (!std::equal(current.begin() + i, current.begin() + i + m, previous.begin() + j)) continue;  // a collision
    if (i - opt_.margin <= L) return std::nullopt;  // re-aligned at once (or within the margin): L's state serves
    return i - opt_.margin;
  }
  return std::nullopt;
}

}  // namespace tandem::serve
