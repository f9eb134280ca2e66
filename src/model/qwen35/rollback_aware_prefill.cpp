#include "model/qwen35/rollback_aware_prefill.h"

#include <algorithm>

namespace tandem {

void plan_delta_rule_segments(int64_t T, std::span<const int64_t> cuts, int64_t rollback_states,
                              int64_t per_token_tail, bool chunked, std::vector<DeltaRuleSegment>& out) {
  out.clear();
  if (T <= 0) return;
  // Tokens [tail, T) run per token so that each of their states is seen (the state after token
  // tail-1 is the oldest rollback slot), and at least the requested per-token tail.
  const int64_t tail_len = std::max<int64_t>(rollback_states > 0 ? rollback_states - 1 : 0, per_token_tail);
  const int64_t tail = tail_len > 0 ? std::max<int64_t>(0, T - tail_len) : T;
  // Segment ends: every cut, the tail's start, the pass's end — ascending, once each. The
  // segments are built in place (no allocation once `out` has grown to the pass's shape).
  int64_t begin = 0;
  size_t c = 0;
  while (begin < T) {
    int64_t end = T;
    while (c < cuts.size() && cuts[c] <= begin) ++c;
    if (c < cuts.size()) end = std::min(end, cuts[c]);
    if (tail > begin && tail < end) end = tail;
    out.push_back(DeltaRuleSegment{begin, end, !chunked || begin >= tail});
    begin = end;
  }
}

}  // namespace tandem
