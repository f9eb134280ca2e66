// Numeric bounds (JSON Schema minimum / maximum / exclusive*) as a GBNF expression
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

// A bound of a number range: the value and whether it is exclusive.
struct NumberBound {
  double value;
  bool exclusive = false;
};

// An expression matching JSON numbers in the range, written without an exponent (a bounded
// number with an exponent could be anything: left out, so the language is a subset). Every
// number it matches is in the range; it misses those whose integral part sits next to a
// non-integral bound (x >= 1.5 matches 2, 2.7, ... but not 1.7). Throws GrammarError when it
// matches nothing.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace tandem::grammar
