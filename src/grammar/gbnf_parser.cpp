#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "grammar/vocab_index.h"

namespace tandem::grammar {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || (c >= '0' && c <= '9');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool is_end_of_sequence(const Element& e) { return e.type == ElemType::End || e.type == ElemType::Alt; }

// A byte for messages: printable ASCII as is, the rest as \xNN.
std::string show_byte(std::string_view s, size_t pos) {
  if (pos >= s.size()) return "end of input";
  const unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  static const char* hex = "0123456789ABCDEF";
  return std::string("byte \\x") + hex[c >> 4] + hex[c & 15];
}

class Parser {
 public:
  Parser(std::string_view src, const GrammarLimits& limits, const VocabIndex* vocab)
      : s_(src), lim_(limits), vocab_(vocab), start_(std::chrono::steady_clock::now()) {}

  ParsedGrammar run() {
    if (s_.size() > lim_.max_source_bytes)
      fail(0, "grammar is " + std::to_string(s_.size()) + " bytes, over the limit of " +
                  std::to_string(lim_.max_source_bytes) + " (max_source_bytes)");
    const size_t nul = s_.find('\0');
    if (nul != std::string_view::npos) fail(nul, "unexpected NUL byte");
    size_t pos = parse_space(0, true);
    while (pos < s_.size()) pos = parse_rule(pos);
    check_defined();
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail_global("grammar does not contain a 'root' symbol");
    out_.root = root->second;
    check_left_recursion();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw GrammarError("GBNF parse error at " + std::to_string(line) + ":" + std::to_string(col) + " (byte " +
                       std::to_string(pos) + "): " + what);
  }
  [[noreturn]] void fail_global(const std::string& what) const { throw GrammarError("GBNF error: " + what); }

  char at(size_t pos) const { return pos < s_.size() ? s_[pos] : '\0'; }

  void tick(size_t pos) {
    if ((++ticks_ & 1023) != 0) return;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    if (ms > lim_.max_compile_ms) fail(pos, "compile time limit of " + std::to_string(lim_.max_compile_ms) + " ms reached (max_compile_ms)");
  }

  uint32_t get_symbol_id(std::string_view name, size_t pos) {
    const auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    return new_symbol(std::string(name), pos);
  }
  uint32_t generate_symbol_id(const std::string& base, size_t pos) {
    return new_symbol(base + "_" + std::to_string(out_.rules.size()), pos);
  }
  uint32_t new_symbol(std::string name, size_t pos) {
    if (out_.rules.size() >= lim_.max_rules)
      fail(pos, "more than " + std::to_string(lim_.max_rules) + " rules after rewriting repetitions (max_rules)");
    const uint32_t id = static_cast<uint32_t>(out_.rules.size());
    ids_.emplace(name, id);
    out_.names.push_back(std::move(name));
    out_.rules.emplace_back();
    first_use_.push_back(pos);
    return id;
  }
  void add_rule(uint32_t id, std::vector<Element> rule, size_t pos) {
    n_elements_ += rule.size();
    if (n_elements_ > lim_.max_elements)
      fail(pos, "more than " + std::to_string(lim_.max_elements) + " grammar elements (max_elements)");
    out_.rules[id] = std::move(rule);
  }
  void count_elements(size_t n, size_t pos) {
    if (n > lim_.max_elements) fail(pos, "more than " + std::to_string(lim_.max_elements) + " grammar elements (max_elements)");
  }

  size_t parse_space(size_t pos, bool newline_ok) const {
    while (pos < s_.size()) {
      const char c = s_[pos];
      if (c == ' ' || c == '\t') {
        ++pos;
      } else if (c == '#') {
        while (pos < s_.size() && s_[pos] != '\r' && s_[pos] != '\n') ++pos;
      } else if (newline_ok && (c == '\r' || c == '\n')) {
        ++pos;
      } else {
        break;
      }
    }
    return pos;
  }

  size_t parse_name(size_t pos) const {
    size_t end = pos;
    while (is_word_char(at(end))) ++end;
    if (end == pos) fail(pos, "expected a rule name, found " + show_byte(s_, pos));
    return end;
  }

  // Digits as an unsigned number; saturates (callers compare against small limits).
  size_t parse_int(size_t pos, uint64_t& value) const {
    size_t end = pos;
    value = 0;
    while (is_digit(at(end))) {
      value = std::min<uint64_t>(value * 10 + static_cast<uint64_t>(at(end) - '0'), uint64_t{1} << 40);
      ++end;
    }
    if (end == pos) fail(pos, "expected an integer, found " + show_byte(s_, pos));
    return end;
  }

  // llama.cpp's decode_utf8 on the grammar text: the lead byte's high nibble gives the length;
  // a stray continuation byte stands for itself; a sequence cut short by the end stops there.
  size_t decode_utf8(size_t pos, uint32_t& cp) const {
    static const int lookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
    const uint8_t first = static_cast<uint8_t>(s_[pos]);
    const int len = lookup[first >> 4];
    const uint8_t mask = static_cast<uint8_t>((1 << (8 - len)) - 1);
    cp = first & mask;
    size_t p = pos + 1;
    for (; p < pos + static_cast<size_t>(len) && p < s_.size(); ++p) cp = (cp << 6) + (static_cast<uint8_t>(s_[p]) & 0x3F);
    return p;
  }

  size_t parse_hex(size_t pos, int size, uint32_t& cp) const {
    cp = 0;
    size_t p = pos;
    for (int i = 0; i < size; ++i, ++p) {
      const int v = hex_value(at(p));
      if (v < 0) fail(p, "expected " + std::to_string(size) + " hex digits after the escape, found " + show_byte(s_, p));
      cp = (cp << 4) | static_cast<uint32_t>(v);
    }
    return p;
  }

  size_t parse_char(size_t pos, uint32_t& cp) const {
    if (pos >= s_.size()) fail(pos, "unexpected end of input");
    if (s_[pos] == '\\') {
      switch (at(pos + 1)) {
        case 'x': return parse_hex(pos + 2, 2, cp);
        case 'u': return parse_hex(pos + 2, 4, cp);
        case 'U': return parse_hex(pos + 2, 8, cp);
        case 't': cp = '\t'; return pos + 2;
        case 'r': cp = '\r'; return pos + 2;
        case 'n': cp = '\n'; return pos + 2;
        case '\\':
        case '"':
        case '[':
        case ']': cp = static_cast<uint8_t>(s_[pos + 1]); return pos + 2;
        default:
          if (pos + 1 >= s_.size()) fail(pos + 1, "unexpected end of input after '\\'");
          fail(pos, "unknown escape \\" + std::string(1, s_[pos + 1]) +
                        " (expected one of \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\])");
      }
    }
    return decode_utf8(pos, cp);
  }

  // `<[id]>` or `<text>`; pos at '<'.
  size_t parse_token(size_t pos, uint32_t& id) {
    const size_t start = pos;
    if (at(pos) != '<') fail(pos, "expected '<' to start a token, found " + show_byte(s_, pos));
    ++pos;
    if (at(pos) == '[') {
      ++pos;
      uint64_t v = 0;
      pos = parse_int(pos, v);
      if (at(pos) != ']') fail(pos, "expected ']' after the token id, found " + show_byte(s_, pos));
      ++pos;
      if (at(pos) != '>') fail(pos, "expected '>' after the token id, found " + show_byte(s_, pos));
      ++pos;
      if (vocab_ && v >= static_cast<uint64_t>(vocab_->n_vocab()))
        fail(start, "token id " + std::to_string(v) + " is outside the vocabulary (" + std::to_string(vocab_->n_vocab()) + " tokens)");
      if (v > 0x7FFFFFFFu) fail(start, "token id " + std::to_string(v) + " is too large");
      id = static_cast<uint32_t>(v);
      return pos;
    }
    while (pos < s_.size() && s_[pos] != '>') ++pos;
    if (at(pos) != '>') fail(pos, "expected '>' to close the token, found end of input");
    ++pos;
    const std::string_view text = s_.substr(start, pos - start);
    if (!vocab_) fail(start, "no vocabulary to look up the token " + std::string(text));
    // A token text must be exactly one token: the stored string first (special tokens), else
    // the tokenizer with special tokens recognized, as llama.cpp's tokenize(..., parse_special).
    const auto& tok = vocab_->tokenizer();
    if (const auto found = tok.vocab().find(text)) {
      id = static_cast<uint32_t>(*found);
      return pos;
    }
    const auto ids = tok.encode(text, text::EncodeOptions{.parse_special = true});
    if (ids.size() != 1) fail(start, "invalid token '" + std::string(text) + "': it is not exactly one token of the vocabulary");
    id = static_cast<uint32_t>(ids[0]);
    return pos;
  }

  size_t parse_sequence(size_t pos, const std::string& rule_name, std::vector<Element>& out, bool nested, int depth) {
    size_t last_sym_start = out.size();
    uint32_t n_prev_rules = 1;
    auto handle_repetitions = [&](size_t at_pos, uint64_t min_times, uint64_t max_times, bool no_max) {
      if (last_sym_start == out.size()) fail(at_pos, "expected an item before the repetition operator " + show_byte(s_, at_pos));
      // S{m,n} -> S (m times) S'(n-m); S'(k) ::= S S'(k-1) | ; S'(1) ::= S | ;
      // S{m,}  -> S (m times) S';     S' ::= S S' | ;   (llama.cpp's rewrite, unchanged)
      const std::vector<Element> prev(out.begin() + static_cast<ptrdiff_t>(last_sym_start), out.end());
      if (min_times == 0) {
        out.resize(last_sym_start);
      } else {
        count_elements(out.size() + prev.size() * (min_times - 1), at_pos);
        for (uint64_t i = 1; i < min_times; ++i) out.insert(out.end(), prev.begin(), prev.end());
      }
      uint32_t last_rec = 0;
      const uint64_t n_opt = no_max ? 1 : max_times - min_times;
      for (uint64_t i = 0; i < n_opt; ++i) {
        tick(at_pos);
        std::vector<Element> rec(prev);
        const uint32_t rec_id = generate_symbol_id(rule_name, at_pos);
        if (i > 0 || no_max) rec.push_back({ElemType::RuleRef, no_max ? rec_id : last_rec});
        rec.push_back({ElemType::Alt, 0});
        rec.push_back({ElemType::End, 0});
        add_rule(rec_id, std::move(rec), at_pos);
        last_rec = rec_id;
      }
      if (n_opt > 0) out.push_back({ElemType::RuleRef, last_rec});
      count_elements(out.size(), at_pos);
    };
    while (pos < s_.size()) {
      tick(pos);
      const char c = s_[pos];
      if (c == '"') {
        const size_t open = pos;
        ++pos;
        last_sym_start = out.size();
        n_prev_rules = 1;
        while (at(pos) != '"') {
          if (pos >= s_.size()) fail(open, "unterminated string literal (expected '\"')");
          uint32_t cp = 0;
          pos = parse_char(pos, cp);
          out.push_back({ElemType::Char, cp});
        }
        count_elements(out.size(), pos);
        pos = parse_space(pos + 1, nested);
      } else if (c == '[') {
        const size_t open = pos;
        ++pos;
        ElemType start_type = ElemType::Char;
        if (at(pos) == '^') {
          ++pos;
          start_type = ElemType::CharNot;
        }
        last_sym_start = out.size();
        n_prev_rules = 1;
        while (at(pos) != ']') {
          if (pos >= s_.size()) fail(open, "unterminated character class (expected ']')");
          uint32_t cp = 0;
          pos = parse_char(pos, cp);
          out.push_back({last_sym_start < out.size() ? ElemType::CharAlt : start_type, cp});
          if (at(pos) == '-' && at(pos + 1) != ']') {
            if (pos + 1 >= s_.size()) fail(pos + 1, "unexpected end of input in a character range");
            uint32_t hi = 0;
            pos = parse_char(pos + 1, hi);
            out.push_back({ElemType::CharRngUpper, hi});
          }
        }
        if (last_sym_start == out.size()) fail(open, "empty character class");
        count_elements(out.size(), pos);
        pos = parse_space(pos + 1, nested);
      } else if (c == '<' || c == '!') {
        ElemType type = ElemType::Token;
        if (c == '!') {
          type = ElemType::TokenNot;
          ++pos;
        }
        uint32_t id = 0;
        pos = parse_token(pos, id);
        last_sym_start = out.size();
        n_prev_rules = 1;
        out.push_back({type, id});
        pos = parse_space(pos, nested);
      } else if (is_word_char(c)) {
        const size_t end = parse_name(pos);
        const uint32_t ref = get_symbol_id(s_.substr(pos, end - pos), pos);
        pos = parse_space(end, nested);
        last_sym_start = out.size();
        n_prev_rules = 1;
        out.push_back({ElemType::RuleRef, ref});
      } else if (c == '(') {
        if (depth >= kMaxNesting) fail(pos, "parentheses nested deeper than " + std::to_string(kMaxNesting));
        const size_t open = pos;
        pos = parse_space(pos + 1, true);
        const size_t n_before = out_.rules.size();
        const uint32_t sub = generate_symbol_id(rule_name, open);
        pos = parse_alternates(pos, rule_name, sub, true, depth + 1);
        n_prev_rules = std::max<uint32_t>(1, static_cast<uint32_t>(out_.rules.size() - n_before));
        last_sym_start = out.size();
        out.push_back({ElemType::RuleRef, sub});
        if (at(pos) != ')') fail(pos, "expected ')' to close the group opened at byte " + std::to_string(open) + ", found " + show_byte(s_, pos));
        pos = parse_space(pos + 1, nested);
      } else if (c == '.') {
        last_sym_start = out.size();
        n_prev_rules = 1;
        out.push_back({ElemType::CharAny, 0});
        pos = parse_space(pos + 1, nested);
      } else if (c == '*' || c == '+' || c == '?') {
        const size_t op = pos;
        pos = parse_space(pos + 1, nested);
        if (c == '*') handle_repetitions(op, 0, 0, true);
        else if (c == '+') handle_repetitions(op, 1, 0, true);
        else handle_repetitions(op, 0, 1, false);
      } else if (c == '{') {
        const size_t op = pos;
        pos = parse_space(pos + 1, nested);
        if (!is_digit(at(pos))) fail(pos, "expected an integer after '{', found " + show_byte(s_, pos));
        uint64_t min_times = 0, max_times = 0;
        pos = parse_space(parse_int(pos, min_times), nested);
        bool no_max = true;
        if (at(pos) == '}') {
          max_times = min_times;
          no_max = false;
          pos = parse_space(pos + 1, nested);
        } else if (at(pos) == ',') {
          pos = parse_space(pos + 1, nested);
          if (is_digit(at(pos))) {
            pos = parse_space(parse_int(pos, max_times), nested);
            no_max = false;
          }
          if (at(pos) != '}') fail(pos, "expected '}' to close the repetition, found " + show_byte(s_, pos));
          pos = parse_space(pos + 1, nested);
        } else {
          fail(pos, "expected ',' or '}' in the repetition, found " + show_byte(s_, pos));
        }
        const uint64_t limit = static_cast<uint64_t>(std::max(0, lim_.max_repetition));
        if (min_times > limit) fail(op, "number of repetitions exceeds sane defaults (" + std::to_string(min_times) + " > " + std::to_string(limit) + ")");
        if (!no_max && max_times < min_times) fail(op, "repetition maximum " + std::to_string(max_times) + " is below its minimum " + std::to_string(min_times));
        // llama.cpp: a maximum above the threshold silently means "unbounded".
        if (!no_max && max_times > limit) no_max = true;
        const uint64_t reps = no_max ? std::max<uint64_t>(min_times, 1) : max_times;
        if (n_prev_rules > 1 && static_cast<uint64_t>(n_prev_rules) * reps >= limit)
          fail(op, "number of rules (" + std::to_string(n_prev_rules) + " x " + std::to_string(reps) + " repetitions) exceeds sane defaults");
        handle_repetitions(op, min_times, max_times, no_max);
      } else {
        break;
      }
    }
    return pos;
  }

  size_t parse_alternates(size_t pos, const std::string& rule_name, uint32_t rule_id, bool nested, int depth) {
    std::vector<Element> rule;
    pos = parse_sequence(pos, rule_name, rule, nested, depth);
    while (at(pos) == '|') {
      rule.push_back({ElemType::Alt, 0});
      pos = parse_space(pos + 1, true);
      pos = parse_sequence(pos, rule_name, rule, nested, depth);
    }
    rule.push_back({ElemType::End, 0});
    add_rule(rule_id, std::move(rule), pos);
    return pos;
  }

  size_t parse_rule(size_t pos) {
    const size_t name_end = parse_name(pos);
    const std::string name(s_.substr(pos, name_end - pos));
    size_t p = parse_space(name_end, false);
    const uint32_t id = get_symbol_id(name, pos);
    if (!(at(p) == ':' && at(p + 1) == ':' && at(p + 2) == '='))
      fail(p, "expected '::=' after rule name '" + name + "', found " + show_byte(s_, p));
    p = parse_space(p + 3, true);
    p = parse_alternates(p, name, id, false, 0);
    if (at(p) == '\r') p += at(p + 1) == '\n' ? 2 : 1;
    else if (at(p) == '\n') ++p;
    else if (p < s_.size()) fail(p, "expected a newline or the end after rule '" + name + "', found " + show_byte(s_, p));
    return parse_space(p, true);
  }

  void check_defined() const {
    for (size_t r = 0; r < out_.rules.size(); ++r)
      if (out_.rules[r].empty()) fail(first_use_[r], "undefined rule identifier '" + out_.names[r] + "'");
  }

  // Left recursion: some rule can reach itself as the leftmost symbol, through a prefix of rules
  // that can all derive "" (full nullability, a fixpoint; llama.cpp only counts a directly empty
  // alternative). Iterative, so the C++ stack does not depend on the grammar.
  void check_left_recursion() {
    const size_t n = out_.rules.size();
    std::vector<uint8_t> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        bool seq_ok = true;
        for (const Element& e : out_.rules[r]) {
          if (is_end_of_sequence(e)) {
            if (seq_ok) {
              nullable[r] = 1;
              changed = true;
              break;
            }
            seq_ok = true;
          } else if (e.type == ElemType::RuleRef) {
            seq_ok = seq_ok && nullable[e.value];
          } else if (e.type == ElemType::Char || e.type == ElemType::CharNot || e.type == ElemType::CharAny ||
                     e.type == ElemType::Token || e.type == ElemType::TokenNot) {
            seq_ok = false;
          }
        }
      }
    }
    // Edges r -> s where s can be the leftmost symbol of r.
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r) {
      bool at_left = true;
      for (const Element& e : out_.rules[r]) {
        if (is_end_of_sequence(e)) {
          at_left = true;
        } else if (e.type == ElemType::RuleRef) {
          if (at_left) left[r].push_back(e.value);
          at_left = at_left && nullable[e.value];
        } else if (e.type == ElemType::Char || e.type == ElemType::CharNot || e.type == ElemType::CharAny ||
                   e.type == ElemType::Token || e.type == ElemType::TokenNot) {
          at_left = false;
        }
      }
    }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (size_t r0 = 0; r0 < n; ++r0) {
      if (color[r0]) continue;
      stack.push_back({static_cast<uint32_t>(r0), 0});
      color[r0] = 1;
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        if (i < left[r].size()) {
          const uint32_t s = left[r][i++];
          if (color[s] == 1)
            fail_global("unsupported grammar, left recursion detected for nonterminal '" + out_.names[s] + "'");
          if (color[s] == 0) {
            color[s] = 1;
            stack.push_back({s, 0});
          }
        } else {
          color[r] = 2;
          stack.pop_back();
        }
      }
    }
  }

  std::string_view s_;
  const GrammarLimits& lim_;
  const VocabIndex* vocab_;
  std::chrono::steady_clock::time_point start_;
  uint64_t ticks_ = 0;
  size_t n_elements_ = 0;
  ParsedGrammar out_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<size_t> first_use_;  // by rule id: where it was first named (undefined-rule errors)
};

void print_cp(std::string& out, uint32_t cp) {
  if (cp >= 0x20 && cp < 0x7F && cp != '"' && cp != '\\' && cp != '[' && cp != ']' && cp != '-' && cp != '^') {
    out += static_cast<char>(cp);
  } else {
    char buf[16];
    snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02X" : (cp <= 0xFFFF ? "\\u%04X" : "\\U%08X"), cp);
    out += buf;
  }
}

}  // namespace

ParsedGrammar parse_gbnf(std::string_view src, const GrammarLimits& limits, const VocabIndex* vocab) {
  return Parser(src, limits, vocab).run();
}

std::string print_gbnf(const ParsedGrammar& g) {
  std::string out;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    out += g.names[r] + " ::=";
    const auto& rule = g.rules[r];
    for (size_t i = 0; i < rule.size(); ++i) {
      const Element& e = rule[i];
      switch (e.type) {
        case ElemType::End: break;
        case ElemType::Alt: out += " |"; break;
        case ElemType::RuleRef: out += " " + g.names[e.value]; break;
        case ElemType::Char:
        case ElemType::CharNot:
          out += e.type == ElemType::Char ? " [" : " [^";
          print_cp(out, e.value);
          break;
        case ElemType::CharRngUpper: out += "-"; print_cp(out, e.value); break;
        case ElemType::CharAlt: print_cp(out, e.value); break;
        case ElemType::CharAny: out += " ."; break;
        case ElemType::Token: out += " <[" + std::to_string(e.value) + "]>"; break;
        case ElemType::TokenNot: out += " !<[" + std::to_string(e.value) + "]>"; break;
      }
      const bool class_elem = e.type == ElemType::Char || e.type == ElemType::CharNot || e.type == ElemType::CharAlt ||
                              e.type == ElemType::CharRngUpper;
      if (class_elem && i + 1 < rule.size() && rule[i + 1].type != ElemType::CharAlt &&
          rule[i + 1].type != ElemType::CharRngUpper)
        out += "]";
    }
    out += "\n";
  }
  return out;
}

}  // namespace tandem::grammar
