// The forecast of the next divergence (issue 30) on named token segments: an inserted span ends
// where the prompt re-aligns with the previous one; a dropped span (a sliding window) or no
// re-alignment within max_span forecasts nothing; runs that are not unique never anchor.
#include "serve/policy/divergence_forecast.h"

#include <gtest/gtest.h>

#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

TEST(DivergenceForecast, AnInsertedSpanEndsWhereThePromptReAligns) {
  DivergenceForecast f;
  const auto prev = cat({seg(1, 300), seg(50, 400)});                 // prefix, screen section
  const auto cur = cat({seg(1, 300), seg(10, 70), seg(50, 200), seg(51, 300)});  // a history line inserted
  EXPECT_EQ(f.predict(prev, cur, 300), std::optional<int64_t>(369));
}

TEST(DivergenceForecast, AReplacedSpanEndsWhereThePromptReAligns) {
  // "no action yet" replaced by the first history line.
  DivergenceForecast f;
  const auto prev = cat({seg(1, 300), seg(9, 12), seg(50, 400)});
  const auto cur = cat({seg(1, 300), seg(10, 70), seg(50, 400)});
  EXPECT_EQ(f.predict(prev, cur, 300), std::optional<int64_t>(369));
}

TEST(DivergenceForecast, TheMarginKeepsTheTokenBeforeTheReAlignment) {
  // The inserted span's last token (".\n\n") is where the next step's line goes in, and BPE
  // re-merges it (".\n" + "Step"): the forecast keeps the state one token before the re-alignment,
  // or at the re-alignment itself with margin 0.
  const auto prev = cat({seg(1, 300), seg(50, 400)});
  const auto cur = cat({seg(1, 300), seg(10, 70), seg(50, 400)});
  EXPECT_EQ(DivergenceForecast(ForecastOptions{.margin = 0}).predict(prev, cur, 300), std::optional<int64_t>(370));
  EXPECT_EQ(DivergenceForecast(ForecastOptions{.margin = 4}).predict(prev, cur, 300), std::optional<int64_t>(366));
  // A one-token insertion: within the margin, so L's own state is the forecast (none).
  EXPECT_EQ(DivergenceForecast().predict(prev, cat({seg(1, 300), seg(10, 1), seg(50, 400)}), 300), std::nullopt);
}

TEST(DivergenceForecast, ADroppedSpanOrNoReAlignmentForecastsNothing) {
  DivergenceForecast f;
  // A sliding window: the oldest line left, the rest moved up: re-aligned at L itself.
  const auto prev = cat({seg(1, 300), seg(10, 20), seg(11, 20), seg(12, 20), seg(50, 300)});
  const auto cur = cat({seg(1, 300), seg(11, 20), seg(12, 20), seg(13, 20), seg(51, 300)});
  EXPECT_EQ(f.predict(prev, cur, 300), std::nullopt);
  // A new screen with nothing in common after L.
  EXPECT_EQ(f.predict(cat({seg(1, 300), seg(50, 300)}), cat({seg(1, 300), seg(60, 300)}), 300), std::nullopt);
  // The insertion is longer than max_span.
  DivergenceForecast narrow(ForecastOptions{.run = 16, .max_span = 64});
  EXPECT_EQ(narrow.predict(cat({seg(1, 300), seg(50, 300)}), cat({seg(1, 300), seg(10, 100), seg(50, 300)}), 300),
            std::nullopt);
  EXPECT_EQ(narrow.predict(cat({seg(1, 300), seg(50, 300)}), cat({seg(1, 300), seg(10, 60), seg(50, 300)}), 300),
            std::optional<int64_t>(359));
}

TEST(DivergenceForecast, RunsThatRepeatNeverAnchor) {
  // The only common text after L is a block the previous prompt holds twice (an element list's
  // boilerplate): it says nothing about where the inserted span ends.
  DivergenceForecast f;
  const auto block = seg(70, 30);
  const auto prev = cat({seg(1, 300), block, seg(80, 5), block});
  const auto cur = cat({seg(1, 300), seg(10, 50), block, seg(81, 100)});
  EXPECT_EQ(f.predict(prev, cur, 300), std::nullopt);
  // Shorter than the run length: no anchor either.
  EXPECT_EQ(f.predict(cat({seg(1, 300), seg(50, 10)}), cat({seg(1, 300), seg(10, 50), seg(50, 10)}), 300),
            std::nullopt);
}

}  // namespace
}  // namespace tandem::serve
