// Integer bounds (JSON Schema minimum / maximum / exclusive* on "integer") as a GBNF expression
// over decimal text, digit by digit, the way llama.cpp's _build_min_max_int does: the language
// is exactly the integers of [lo, hi] written without leading zeros. The integral part is
// capped at 16 digits like llama.cpp's `integral-part`, so an open bound stops at ±(10^16 - 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tandem::grammar {

inline constexpr int64_t kMaxJsonInteger = 9999999999999999;  // 16 digits

// An expression (alternatives in parentheses where needed, no trailing whitespace) matching the
// integers in [lo, hi] (missing bound: the 16-digit cap). "-0" is not produced. Throws
// GrammarError when the range is empty.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace tandem::grammar
