#include "grammar/integer_range.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {
namespace {

std::string digit_class(char a, char b) {
  if (a == b) return std::string("[") + a + "]";
  return std::string("[") + a + "-" + b + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

std::string join_seq(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Decimal strings of equal length n with lo <= x <= hi (lo, hi of length n, leading zeros
// allowed here: the caller fixes the first digit). Alternatives are returned separately so that
// the caller can join them without nesting parentheses needlessly.
void same_length(const std::string& lo, const std::string& hi, std::string prefix, std::vector<std::string>& out) {
  const size_t n = lo.size();
  if (n == 0) {
    out.push_back(prefix);
    return;
  }
  if (lo == hi) {
    out.push_back(join_seq(prefix, "\"" + lo + "\""));
    return;
  }
  if (lo[0] == hi[0]) {
    same_length(lo.substr(1), hi.substr(1), join_seq(prefix, digit_class(lo[0], lo[0])), out);
    return;
  }
  const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  const bool lo_open = rest_lo.find_first_not_of('0') == std::string::npos;  // lo0 000..: full block
  const bool hi_open = rest_hi.find_first_not_of('9') == std::string::npos;  // hi0 999..: full block
  char first_full = lo_open ? lo[0] : static_cast<char>(lo[0] + 1);
  char last_full = hi_open ? hi[0] : static_cast<char>(hi[0] - 1);
  if (!lo_open) same_length(rest_lo, std::string(n - 1, '9'), join_seq(prefix, digit_class(lo[0], lo[0])), out);
  if (first_full <= last_full) out.push_back(join_seq(join_seq(prefix, digit_class(first_full, last_full)), any_digits(n - 1)));
  if (!hi_open) same_length(std::string(n - 1, '0'), rest_hi, join_seq(prefix, digit_class(hi[0], hi[0])), out);
}

// Non-negative integers in [lo, hi], lo <= hi.
void non_negative(int64_t lo, int64_t hi, std::vector<std::string>& out) {
  std::string slo = std::to_string(lo), shi = std::to_string(hi);
  for (size_t len = slo.size(); len <= shi.size(); ++len) {
    if (hi == kMaxJsonInteger && len > slo.size()) {
      // Every length from here to the cap is a full block: one alternative, as integral-part.
      const std::string reps = len - 1 == 15 ? "{15}" : "{" + std::to_string(len - 1) + ",15}";
      out.push_back("[1-9] [0-9]" + reps);
      return;
    }
    std::string a = len == slo.size() ? slo : "1" + std::string(len - 1, '0');
    if (len == 1 && len != slo.size()) a = "0";
    std::string b = len == shi.size() ? shi : std::string(len, '9');
    same_length(a, b, "", out);
  }
}

std::string alternatives(const std::vector<std::string>& alts) {
  std::string s;
  for (size_t i = 0; i < alts.size(); ++i) s += (i ? " | " : "") + alts[i];
  return alts.size() > 1 ? "(" + s + ")" : s;
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo_opt, std::optional<int64_t> hi_opt) {
  const int64_t lo = std::max(lo_opt.value_or(-kMaxJsonInteger), -kMaxJsonInteger);
  const int64_t hi = std::min(hi_opt.value_or(kMaxJsonInteger), kMaxJsonInteger);
  if (lo > hi) throw GrammarError("integer range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is empty");
  std::vector<std::string> alts;
  if (lo < 0) {
    // Negative part: "-" then the magnitudes [max(1, -hi), -lo].
    std::vector<std::string> neg;
    non_negative(std::max<int64_t>(1, -std::min<int64_t>(hi, -1)), -lo, neg);
    alts.push_back("\"-\" " + alternatives(neg));
  }
  if (hi >= 0) non_negative(std::max<int64_t>(lo, 0), hi, alts);
  return alternatives(alts);
}

namespace {

constexpr double kCap = static_cast<double>(kMaxJsonInteger);

// Non-negative decimals m = I.F in [lo, hi] (lo >= 0).
void magnitudes(NumberBound lo, std::optional<NumberBound> hi, std::vector<std::string>& out) {
  const std::string any_frac = " (\".\" [0-9]{1,16})?", zero_frac = " (\".\" [0]{1,16})?",
                    nonzero_frac = " \".\" [0-9]{0,15} [1-9] [0-9]{0,15}";
  const double l = std::min(lo.value, kCap + 1);
  // Integral parts whose every fraction is in range, and those only whole values are.
  const int64_t a = static_cast<int64_t>(lo.exclusive ? std::floor(l) + 1 : std::ceil(l));
  int64_t b = kMaxJsonInteger, c = kMaxJsonInteger;
  if (hi) {
    const double h = std::min(hi->value, kCap + 1);
    b = static_cast<int64_t>(std::floor(h)) - 1;
    c = static_cast<int64_t>(hi->exclusive ? std::ceil(h) - 1 : std::floor(h));
  }
  b = std::min(b, kMaxJsonInteger);
  c = std::min(c, kMaxJsonInteger);
  if (a <= b) out.push_back(integer_range_gbnf(a, b) + any_frac);
  const int64_t a2 = std::max(a, b + 1);
  if (a2 <= c) out.push_back(integer_range_gbnf(a2, c) + zero_frac);
  // x > n for a whole n: n itself with a fraction that is not all zeros (0.5 > 0).
  if (lo.exclusive && std::floor(l) == l && l <= kCap && (!hi || hi->value >= l + 1))
    out.push_back(integer_range_gbnf(static_cast<int64_t>(l), static_cast<int64_t>(l)) + nonzero_frac);
}

}  // namespace

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  std::vector<std::string> alts;
  // x >= 0: magnitudes from max(lo, 0).
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    NumberBound from = lo && lo->value >= 0 ? *lo : NumberBound{0, false};
    magnitudes(from, hi, alts);
  }
  // x < 0: "-" and magnitudes in (max(-hi, 0), -lo].
  if (!lo || lo->value < 0) {
    std::vector<std::string> neg;
    NumberBound from = hi && hi->value < 0 ? NumberBound{-hi->value, hi->exclusive} : NumberBound{0, true};
    std::optional<NumberBound> to;
    if (lo) to = NumberBound{-lo->value, lo->exclusive};
    magnitudes(from, to, neg);
    if (!neg.empty()) alts.push_back("\"-\" " + alternatives(neg));
  }
  if (alts.empty()) throw GrammarError("number range is empty");
  return alternatives(alts);
}

}  // namespace tandem::grammar
