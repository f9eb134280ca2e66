#include "text/utf8.h"

namespace tandem::text {

uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) {
    ++i;
    return c;
  }
  // Lead byte: number of continuation bytes and the allowed range of the first one (this range is
  // what excludes overlongs, surrogates and values above U+10FFFF; WHATWG "lower/upper boundary").
  int need;
  uint32_t cp;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    ++i;  // continuation byte without lead, C0, C1, F5..FF
    return kReplacementChar;
  }
  size_t j = i + 1;
  for (int k = 0; k < need; ++k, ++j) {
    if (j >= s.size()) {
      i = j;  // truncated sequence at the end: one replacement for the whole maximal subpart
      return kReplacementChar;
    }
    const uint8_t d = b(j);
    if (d < lo || d > hi) {
      i = j;  // the offending byte is not consumed; it starts the next code point
      return kReplacementChar;
    }
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (d & 0x3F);
  }
  i = j;
  return cp;
}

void decode_utf8(std::string_view s, std::vector<uint32_t>& out) {
  size_t i = 0;
  while (i < s.size()) out.push_back(next_code_point(s, i));
}

void append_utf8(std::string& out, uint32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementChar;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) append_utf8(out, cp);
  return out;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const uint32_t cp = next_code_point(s, i);
    // A real U+FFFD in the input is 3 bytes EF BF BD; a replacement for garbage is anything else.
    if (cp == kReplacementChar && !(i - start == 3 && s.compare(start, 3, "\xEF\xBF\xBD") == 0)) return false;
  }
  return true;
}

size_t incomplete_utf8_tail(std::string_view s) {
  // Look at most 3 bytes back for a lead byte whose sequence is cut off by the end of s and whose
  // bytes so far are a valid prefix.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const uint8_t c = static_cast<uint8_t>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking for the lead
    size_t need = 0;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) need = 3;
    else if (c >= 0xF0 && c <= 0xF4) need = 4;
    if (need <= back) return 0;  // ASCII, invalid lead, or a complete sequence
    // Check the bytes after the lead form a valid prefix (so garbage is not held back forever).
    size_t i = n - back;
    size_t j = i;
    next_code_point(s, j);
    return j == n ? back : 0;
  }
  return 0;
}

}  // namespace tandem::text
