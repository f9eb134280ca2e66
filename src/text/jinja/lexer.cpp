#include "text/jinja/lexer.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "text/jinja/value.h"
#include "text/utf8.h"

namespace tandem::text::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int count_lines(const std::string& s, size_t from, size_t to) {
  int n = 0;
  for (size_t k = from; k < to && k < s.size(); ++k) n += s[k] == '\n';
  return n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's body with Python's escapes (jinja2 decodes them with "unicode-escape"); an
// unknown escape keeps its backslash, as Python does.
std::string decode_string(const std::string& body, int line) {
  std::string out;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] != '\\' || k + 1 >= body.size()) {
      out += body[k];
      continue;
    }
    const char e = body[++k];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case 'a': out += '\a'; break;
      case '\n': break;  // a line continuation
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t j = 1; j <= n; ++j) {
          const int h = k + j < body.size() ? hex_value(body[k + j]) : -1;
          if (h < 0) throw ParseError("truncated \\" + std::string(1, e) + " escape in a string", line);
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) throw ParseError("a \\U escape past U+10FFFF in a string", line);
        text::append_utf8(out, cp);  // a lone surrogate becomes U+FFFD: the prompt stays valid UTF-8
        k += n;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {  // octal, up to three digits
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int j = 0; j < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7'; ++j)
            cp = cp * 8 + static_cast<uint32_t>(body[++k] - '0');
          text::append_utf8(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : s_(std::move(src)) {}

  std::vector<Token> run() {
    bool line_starting = true;  // the last tag's match ended with a newline (jinja2's line_starting)
    while (pos_ < s_.size()) {
      // The next tag start.
      size_t t = pos_;
      while (true) {
        t = s_.find('{', t);
        if (t == std::string::npos || t + 1 >= s_.size()) { t = std::string::npos; break; }
        const char c = s_[t + 1];
        if (c == '{' || c == '%' || c == '#') break;
        ++t;
      }
      if (t == std::string::npos) {
        push_text(s_.substr(pos_));
        line_ += count_lines(s_, pos_, s_.size());
        pos_ = s_.size();
        break;
      }
      std::string text = s_.substr(pos_, t - pos_);
      line_ += count_lines(s_, pos_, t);
      const char kind = s_[t + 1];
      const char sign = t + 2 < s_.size() ? s_[t + 2] : '\0';
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && is_ws(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: only spaces and tabs between the line's start and the tag.
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting) {
          if (text.find_first_not_of(" \t", l_pos) == std::string::npos) text.resize(l_pos);
        }
      }
      push_text(std::move(text));
      pos_ = t + 2 + ((sign == '-' || (sign == '+' && kind != '{')) ? 1 : 0);
      if (kind == '#') {
        const size_t end = s_.find("#}", pos_);
        if (end == std::string::npos) throw ParseError("unterminated comment (no '#}')", line_);
        const bool strip = end > pos_ && s_[end - 1] == '-';
        const bool keep = end > pos_ && s_[end - 1] == '+';
        line_ += count_lines(s_, pos_, end + 2);
        pos_ = end + 2;
        line_starting = close_tag(strip, keep, true);
        continue;
      }
      const bool block = kind == '%';
      tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
      line_starting = lex_tag(block);
    }
    tokens_.push_back({Token::Kind::End, "", line_});
    return std::move(tokens_);
  }

 private:
  void push_text(std::string text) {
    if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), line_});
  }

  // After a tag's closing delimiter: `-` strips the whitespace that follows, trim_blocks drops
  // one newline after a block or comment. Returns whether what was consumed ended in a newline.
  bool close_tag(bool strip, bool keep, bool trims) {
    bool nl = false;
    if (strip) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) {
        nl = s_[pos_] == '\n';
        line_ += s_[pos_] == '\n';
        ++pos_;
      }
    } else if (trims && !keep && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
      ++line_;
      nl = true;
    }
    return nl;
  }

  bool lex_tag(bool block) {
    const char closer = block ? '%' : '}';
    int depth = 0;  // open brackets: a '}}' inside a dict literal does not close the tag
    while (true) {
      while (pos_ < s_.size() && is_ws(s_[pos_])) {
        line_ += s_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= s_.size()) throw ParseError(std::string("unterminated ") + (block ? "'{%' tag" : "'{{' expression"), line_);
      const char c = s_[pos_];
      if (depth == 0) {
        const bool signed_end = (c == '-' || (c == '+' && block)) && s_.compare(pos_ + 1, 2, std::string(1, closer) + "}") == 0;
        if (signed_end || (c == closer && pos_ + 1 < s_.size() && s_[pos_ + 1] == '}')) {
          tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
          pos_ += signed_end ? 3 : 2;
          return close_tag(signed_end && c == '-', signed_end && c == '+', block);
        }
      }
      const int line = line_;
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < s_.size() && (is_name_start(s_[e]) || is_digit(s_[e]))) ++e;
        tokens_.push_back({Token::Kind::Name, s_.substr(pos_, e - pos_), line});
        pos_ = e;
      } else if (is_digit(c)) {
        size_t e = pos_;
        bool is_float = false;
        while (e < s_.size() && (is_digit(s_[e]) || s_[e] == '_')) ++e;
        if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
          is_float = true;
          ++e;
          while (e < s_.size() && (is_digit(s_[e]) || s_[e] == '_')) ++e;
        }
        if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
          size_t x = e + 1;
          if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) ++x;
          if (x < s_.size() && is_digit(s_[x])) {
            is_float = true;
            e = x;
            while (e < s_.size() && is_digit(s_[e])) ++e;
          }
        }
        std::string num;
        for (size_t k = pos_; k < e; ++k)
          if (s_[k] != '_') num += s_[k];
        tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, num, line});
        pos_ = e;
      } else if (c == '\'' || c == '"') {
        size_t e = pos_ + 1;
        while (e < s_.size() && s_[e] != c) {
          if (s_[e] == '\\') ++e;
          ++e;
        }
        if (e >= s_.size()) throw ParseError("unterminated string literal", line);
        line_ += count_lines(s_, pos_, e);
        tokens_.push_back({Token::Kind::String, decode_string(s_.substr(pos_ + 1, e - pos_ - 1), line), line});
        pos_ = e + 1;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                           "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "=", ";"};
        const char* found = nullptr;
        for (const char* op : kOps)
          if (s_.compare(pos_, std::strlen(op), op) == 0) { found = op; break; }
        if (!found) throw ParseError(std::string("unexpected character '") + c + "' in a tag", line);
        if (*found == '(' || *found == '[' || *found == '{') ++depth;
        if ((*found == ')' || *found == ']' || *found == '}') && depth > 0) --depth;
        tokens_.push_back({Token::Kind::Op, found, line});
        pos_ += std::strlen(found);
      }
    }
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) {
  // jinja2 splits on \r\n, \r and \n and joins with \n, dropping one final empty line.
  std::string s;
  s.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      s += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      s += source[k];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return Lexer(std::move(s)).run();
}

}  // namespace tandem::text::jinja
