// Where will the NEXT request diverge? (issue 30) The divergence rule keeps the state at L, where
// this prompt left the previous one. On prompts whose history grows (one line appended per step,
// never dropped, the screen after it) that is one history line short of the next request's
// prefix: request k diverges where line k-1 begins (L), request k+1 where it ends. The forecast
// finds that end from the two prompts alone: after L, the first position X of the current prompt
// where it re-aligns with the previous one — an m-token run that starts at X here and at some
// j in [L, L + max_span] there, and occurs once in each prompt after L (so that the run is the
// section that follows the inserted span, not a phrase the element lists repeat). X > L means
// the current prompt inserted (or replaced) [L, X): the next step's text goes after it, so X is
// where the next request is predicted to diverge. X == L (the previous prompt's text dropped, as
// a sliding window of recent actions does) or no re-alignment within max_span: no forecast.
// The forecast is X - margin, not X: the next step's text goes in at the byte where the inserted
// span ends, and BPE merges whitespace and punctuation across that byte (`".\n\n` before the
// next section becomes `".\n` + `Step ...` once a line follows), so the next request often
// diverges one token before X; a state at X would lie past the divergence and be useless.
//
// Work: O(n log n) over the tokens after L (hashes sorted in buffers reused across requests).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace tandem::serve {

struct ForecastOptions {
  int64_t run = 16;         // m: tokens a re-alignment must match
  int64_t max_span = 1024;  // longest inserted span (one history line is ~50-200 tokens)
  int64_t margin = 1;       // tokens kept before the re-alignment (see above)
};

class DivergenceForecast {
 public:
  explicit DivergenceForecast(ForecastOptions opt = {}) : opt_(opt) {}
  // previous: the tokens the slot held before this request (what L was measured against);
  // current: this prompt; L: their common prefix. Returns X - margin in (L, |current|) or nothing.
  std::optional<int64_t> predict(std::span<const int32_t> previous, std::span<const int32_t> current, int64_t L);
  const ForecastOptions& options() const { return opt_; }

 private:
  ForecastOptions opt_;
  std::vector<std::pair<uint64_t, int64_t>> prev_runs_, cur_runs_;  // (hash of the run, start)
};

}  // namespace tandem::serve
