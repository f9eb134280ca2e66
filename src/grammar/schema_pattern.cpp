#include "grammar/schema_pattern.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kMaxRepeat = 2000;  // GrammarLimits::max_repetition: larger bounds cannot be kept

// A set of code points as sorted, disjoint, non-adjacent closed ranges.
class CharSet {
 public:
  void add(uint32_t a, uint32_t b) {
    r_.emplace_back(a, b);
    normalize();
  }
  void add(const CharSet& o) {
    r_.insert(r_.end(), o.r_.begin(), o.r_.end());
    normalize();
  }
  CharSet complement() const {
    CharSet c;
    uint32_t next = 0;
    for (auto [a, b] : r_) {
      if (a > next) c.r_.emplace_back(next, a - 1);
      next = b + 1;
    }
    if (next <= kMaxCodePoint) c.r_.emplace_back(next, kMaxCodePoint);
    return c;
  }
  CharSet minus(const CharSet& o) const {
    CharSet c = o.complement(), out;
    for (auto [a, b] : r_)
      for (auto [c1, c2] : c.r_) {
        const uint32_t lo = std::max(a, c1), hi = std::min(b, c2);
        if (lo <= hi) out.r_.emplace_back(lo, hi);
      }
    out.normalize();
    return out;
  }
  bool contains(uint32_t c) const {
    for (auto [a, b] : r_)
      if (a <= c && c <= b) return true;
    return false;
  }
  bool empty() const { return r_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return r_; }

 private:
  void normalize() {
    std::sort(r_.begin(), r_.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (auto p : r_) {
      if (!out.empty() && p.first <= out.back().second + 1)
        out.back().second = std::max(out.back().second, p.second);
      else
        out.push_back(p);
    }
    r_ = std::move(out);
  }
  std::vector<std::pair<uint32_t, uint32_t>> r_;
};

CharSet single(uint32_t c) {
  CharSet s;
  s.add(c, c);
  return s;
}

CharSet digits() { return [] { CharSet s; s.add('0', '9'); return s; }(); }
CharSet word() {
  CharSet s;
  s.add('0', '9');
  s.add('A', 'Z');
  s.add('a', 'z');
  s.add('_', '_');
  return s;
}
CharSet spaces() {  // ECMA-262 WhiteSpace and LineTerminator
  CharSet s;
  s.add('\t', '\r');
  s.add(' ', ' ');
  s.add(0xA0, 0xA0);
  s.add(0x1680, 0x1680);
  s.add(0x2000, 0x200A);
  s.add(0x2028, 0x2029);
  s.add(0x202F, 0x202F);
  s.add(0x205F, 0x205F);
  s.add(0x3000, 0x3000);
  s.add(0xFEFF, 0xFEFF);
  return s;
}
CharSet dot() {  // anything but a line terminator
  CharSet t;
  t.add('\n', '\n');
  t.add('\r', '\r');
  t.add(0x2028, 0x2029);
  return t.complement();
}

// Characters JSON requires escaped in a string (plus DEL, which llama.cpp's `char` rule only
// allows escaped): they are emitted as their canonical escape, never raw.
CharSet json_specials() {
  CharSet s;
  s.add(0, 0x1F);
  s.add('"', '"');
  s.add('\\', '\\');
  s.add(0x7F, 0x7F);
  return s;
}

std::string hex(uint32_t c, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", width, c);
  return buf;
}

// A code point inside a GBNF character class.
std::string class_char(uint32_t c) {
  // GBNF knows only \\ \" \[ \] as escaped punctuation; '-' and '^' are written in hex.
  if (c == ']' || c == '[' || c == '\\' || c == '"') return std::string("\\") + static_cast<char>(c);
  if (c == '-' || c == '^') return "\\x" + hex(c, 2);
  if (c >= 0x20 && c < 0x7F) return std::string(1, static_cast<char>(c));
  if (c < 0x100) return "\\x" + hex(c, 2);
  if (c < 0x10000) return "\\u" + hex(c, 4);
  return "\\U" + hex(c, 8);
}

std::string class_text(const CharSet& s, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (auto [a, b] : s.ranges()) {
    out += class_char(a);
    if (b != a) out += (b == a + 1 ? "" : "-") + class_char(b);
  }
  return out + "]";
}

// The canonical JSON escape of a special character, as a GBNF literal.
std::string escaped_literal(uint32_t c) {
  switch (c) {
    case '"': return "\"\\\\\\\"\"";  // matches the two bytes \"
    case '\\': return "\"\\\\\\\\\"";  // matches \\ (two backslashes)
    case '\b': return "\"\\\\b\"";
    case '\f': return "\"\\\\f\"";
    case '\n': return "\"\\\\n\"";
    case '\r': return "\"\\\\r\"";
    case '\t': return "\"\\\\t\"";
    default: {
      std::string h = hex(c, 4);
      for (char& ch : h) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      return "\"\\\\u" + h + "\"";
    }
  }
}

// One character of the set, JSON-encoded.
std::string emit_set(const CharSet& s) {
  const CharSet specials = json_specials();
  CharSet excluded = specials;
  excluded.add(0xD800, 0xDFFF);  // surrogates have no UTF-8 encoding
  const CharSet raw = s.minus(excluded);
  std::vector<std::string> alts;
  if (!raw.empty()) {
    // The shorter of [set] and [^complement] (the complement within all code points).
    const CharSet comp = raw.complement();
    alts.push_back(comp.ranges().size() < raw.ranges().size() ? class_text(comp, true) : class_text(raw, false));
  }
  // Specials with a short escape one by one; the other control characters as one
  // "\u00" [01] [..] group (lowercase, as JSON encoders write them).
  std::string low[2];
  for (auto [a, b] : s.ranges())
    for (uint32_t c = a; c <= b; ++c) {
      if (c > 0x7F) break;
      if (!specials.contains(c)) continue;
      const bool short_escape = c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t';
      if (short_escape || c == 0x7F)
        alts.push_back(escaped_literal(c));
      else
        low[c >> 4] += "0123456789abcdef"[c & 15];
    }
  std::vector<std::string> groups;
  for (int h = 0; h < 2; ++h)
    if (!low[h].empty())
      groups.push_back(std::string("\"") + static_cast<char>('0' + h) + "\" " +
                       (low[h].size() == 1 ? "\"" + low[h] + "\"" : "[" + low[h] + "]"));
  if (groups.size() == 1) alts.push_back("\"\\\\u00\" " + groups[0]);
  if (groups.size() == 2) alts.push_back("\"\\\\u00\" (" + groups[0] + " | " + groups[1] + ")");
  if (alts.empty()) throw GrammarError("empty character class");
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class PatternParser {
 public:
  PatternParser(std::string_view p, const std::string& char_rule) : char_rule_(char_rule) { decode(p); }

  std::string parse() {
    std::string out = alternation(/*top=*/true);
    if (pos_ < cps_.size()) fail("unbalanced ')'");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("pattern: " + what + " at offset " + std::to_string(pos_));
  }

  void decode(std::string_view p) {
    for (size_t i = 0; i < p.size();) {
      const auto b = static_cast<unsigned char>(p[i]);
      int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
      if (n == 0 || i + n > p.size()) throw GrammarError("pattern: invalid UTF-8");
      uint32_t c = n == 1 ? b : b & (0x7F >> n);
      for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(p[i + k]) & 0x3F);
      cps_.push_back(c);
      i += n;
    }
  }

  bool at_end() const { return pos_ >= cps_.size(); }
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0xFFFFFFFFu; }

  std::string alternation(bool top) {
    std::vector<std::string> alts;
    while (true) {
      alts.push_back(sequence(top));
      if (peek() != '|') break;
      ++pos_;
    }
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + (alts[i].empty() ? "\"\"" : alts[i]);
    return out + ")";
  }

  std::string sequence(bool top) {
    std::vector<std::string> items;
    bool anchored_start = false, anchored_end = false;
    if (top && peek() == '^') {
      anchored_start = true;
      ++pos_;
    }
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (top && (at_end() || peek() == '|')) {
          anchored_end = true;
          break;
        }
        fail("'$' is supported only at the end of the pattern");
      }
      if (peek() == '^') fail("'^' is supported only at the start of the pattern");
      std::string atom_text = atom();
      items.push_back(quantified(atom_text));
    }
    if (top && !anchored_start) items.insert(items.begin(), char_rule_ + "*");
    if (top && !anchored_end) items.push_back(char_rule_ + "*");
    std::string out;
    for (const auto& it : items)
      if (!it.empty()) out += (out.empty() ? "" : " ") + it;
    return out;
  }

  bool parse_int(int& v) {
    size_t start = pos_;
    long long acc = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      acc = acc * 10 + (peek() - '0');
      if (acc > 1000000) acc = 1000000;
      ++pos_;
    }
    v = static_cast<int>(acc);
    return pos_ > start;
  }

  std::string quantified(const std::string& atom_text) {
    if (at_end()) return atom_text;
    std::string group = "(" + atom_text + ")";
    std::string out;
    const uint32_t q = peek();
    if (q == '*' || q == '+' || q == '?') {
      ++pos_;
      out = group + static_cast<char>(q);
    } else if (q == '{') {
      const size_t save = pos_;
      ++pos_;
      int m = 0, n = -1;
      bool ok = parse_int(m);
      bool comma = false;
      if (ok && peek() == ',') {
        comma = true;
        ++pos_;
        if (!(peek() == '}')) ok = parse_int(n);
      }
      if (!ok || peek() != '}') {  // not a quantifier: a literal '{' (as ECMA-262 Annex B reads it)
        pos_ = save;
        return atom_text;
      }
      ++pos_;
      if (!comma) n = m;
      if (m > kMaxRepeat || n > kMaxRepeat) fail("repetition bound above " + std::to_string(kMaxRepeat));
      if (n >= 0 && n < m) fail("repetition {m,n} with n < m");
      if (n < 0)
        out = group + "{" + std::to_string(m) + ",}";
      else if (n == m)
        out = group + "{" + std::to_string(m) + "}";
      else
        out = group + "{" + std::to_string(m) + "," + std::to_string(n) + "}";
    } else {
      return atom_text;
    }
    if (peek() == '?') ++pos_;  // lazy: same language
    if (peek() == '+') fail("possessive quantifiers are not supported");
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'))
      return quantified(out);  // a quantifier on a quantified atom, e.g. a{2}* (rare, legal)
    return out;
  }

  std::string atom() {
    const uint32_t c = peek();
    ++pos_;
    switch (c) {
      case '(': {
        if (peek() == '?') {
          if (peek(1) == ':') {
            pos_ += 2;
          } else {
            fail("lookaround, named groups and inline flags are not supported");
          }
        }
        std::string inner = alternation(false);
        if (peek() != ')') fail("missing ')'");
        ++pos_;
        return inner.empty() ? "\"\"" : inner;
      }
      case '[': return emit_set(bracket());
      case '.': return emit_set(dot());
      case '\\': return emit_set(escape(false));
      case '*':
      case '+':
      case '?': fail("quantifier without an atom");
      default: return emit_set(single(c));
    }
  }

  // After a backslash. In a class, \b is a backspace; outside, word boundaries are unsupported.
  CharSet escape(bool in_class) {
    if (at_end()) fail("trailing backslash");
    const uint32_t c = peek();
    ++pos_;
    switch (c) {
      case 'd': return digits();
      case 'D': return digits().complement();
      case 'w': return word();
      case 'W': return word().complement();
      case 's': return spaces();
      case 'S': return spaces().complement();
      case 't': return single('\t');
      case 'n': return single('\n');
      case 'r': return single('\r');
      case 'f': return single('\f');
      case 'v': return single('\v');
      case '0': return single(0);
      case 'b':
        if (in_class) return single('\b');
        fail("\\b (word boundary) is not supported");
      case 'x':
      case 'u': {
        const int n = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          const uint32_t h = peek();
          int d = h >= '0' && h <= '9' ? static_cast<int>(h - '0') : h >= 'a' && h <= 'f' ? static_cast<int>(h - 'a' + 10)
                  : h >= 'A' && h <= 'F' ? static_cast<int>(h - 'A' + 10) : -1;
          if (d < 0) fail("bad \\" + std::string(1, static_cast<char>(c)) + " escape");
          v = v * 16 + static_cast<uint32_t>(d);
          ++pos_;
        }
        return single(v);
      }
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '1' && c <= '9'))
          fail(std::string("escape \\") + static_cast<char>(c) + " is not supported");
        return single(c);  // an escaped punctuation character stands for itself
    }
  }

  CharSet bracket() {
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    CharSet s;
    bool first = true;
    while (true) {
      if (at_end()) fail("missing ']'");
      uint32_t c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      ++pos_;
      CharSet item;
      bool is_single = true;
      uint32_t lo = c;
      if (c == '\\') {
        item = escape(true);
        is_single = item.ranges().size() == 1 && item.ranges()[0].first == item.ranges()[0].second;
        lo = is_single ? item.ranges()[0].first : 0;
      } else {
        item = single(c);
      }
      if (is_single && peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
        ++pos_;
        uint32_t hi = peek();
        ++pos_;
        if (hi == '\\') {
          CharSet h = escape(true);
          if (!(h.ranges().size() == 1 && h.ranges()[0].first == h.ranges()[0].second)) fail("bad class range");
          hi = h.ranges()[0].first;
        }
        if (hi < lo) fail("class range out of order");
        item = CharSet();
        item.add(lo, hi);
      }
      s.add(item);
    }
    return negated ? s.complement() : s;
  }

  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  const std::string& char_rule_;
};

}  // namespace

std::string pattern_to_gbnf(std::string_view pattern, const std::string& char_rule) {
  return PatternParser(pattern, char_rule).parse();
}

}  // namespace tandem::grammar
