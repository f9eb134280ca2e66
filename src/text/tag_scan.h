// Scanning streamed text for a tag (the answer parsers: reasoning.h, tool_calls.h): what of the
// text held so far can be released, and what must wait because it may still become the tag or is
// whitespace that is dropped if the tag follows it.
#pragma once

#include <algorithm>
#include <string_view>

namespace tandem::text {

// std::isspace in the C locale, as llama.cpp's string_strip.
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

inline size_t leading_blanks(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_blank(s[i])) ++i;
  return i;
}

// The length of s without its trailing blanks.
inline size_t without_trailing_blanks(std::string_view s) {
  size_t n = s.size();
  while (n > 0 && is_blank(s[n - 1])) --n;
  return n;
}

// The longest end of s that is a proper beginning of tag: text that may still become the tag.
inline size_t partial_tag_at_end(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

// How much of `held` (which does not contain `tag`) is settled: all but a possible beginning of
// the tag at its end and the blanks before that.
inline size_t settled_before_tag(std::string_view held, std::string_view tag) {
  return without_trailing_blanks(held.substr(0, held.size() - partial_tag_at_end(held, tag)));
}

}  // namespace tandem::text
