#include "text/jinja/builtins.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "text/jinja/interpreter.h"

namespace tandem::text::jinja {
namespace {

const std::set<std::string>& filter_names() {
  static const std::set<std::string> s = {
      "abs",  "capitalize", "count",  "d",     "default", "e",     "escape", "first", "float",      "indent",
      "int",  "items",      "join",   "last",  "length",  "list",  "lower",  "map",   "max",        "min",
      "reject", "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string",
      "sum",  "title",      "tojson", "trim",  "unique",  "upper"};
  return s;
}
const std::set<std::string>& test_names() {
  static const std::set<std::string> s = {
      "defined", "undefined", "none",     "boolean", "false",  "true", "integer",  "float",       "number",
      "string",  "mapping",   "iterable", "sequence", "callable", "sameas", "in", "eq", "equalto", "==", "ne", "!=",
      "lt",      "lessthan",  "<",        "le",      "<=",     "gt",   "greaterthan", ">",        "ge", ">=",
      "odd",     "even",      "divisibleby", "lower", "upper"};
  return s;
}
const std::set<std::string>& method_names() {
  static const std::set<std::string> s = {"startswith", "endswith", "split",  "rsplit", "strip",  "lstrip", "rstrip",
                                          "upper",      "lower",    "replace", "title", "capitalize", "find", "rfind",
                                          "count",      "join",     "isdigit", "isspace", "isalpha", "isalnum",
                                          "get",        "items",    "keys",   "values", "cycle"};
  return s;
}

// ------------------------------------------------------------------ string helpers

bool jinja_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

uint32_t jinja_cp(const std::string& ch) {
  const unsigned char c = static_cast<unsigned char>(ch[0]);
  if (ch.size() == 1) return c;
  uint32_t cp = ch.size() == 2 ? (c & 0x1F) : ch.size() == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < ch.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(ch[k]) & 0x3F);
  return cp;
}

// str.strip / lstrip / rstrip: Unicode whitespace, or any of `chars`.
std::string jinja_strip(const std::string& s, const Value& chars, bool left, bool right) {
  const auto cs = utf8_chars(s);
  std::set<std::string> set;
  const bool custom = chars.is_string();
  if (custom)
    for (auto& c : utf8_chars(chars.s)) set.insert(c);
  const auto strip_me = [&](const std::string& c) { return custom ? set.count(c) > 0 : jinja_py_space(jinja_cp(c)); };
  size_t b = 0, e = cs.size();
  if (left)
    while (b < e && strip_me(cs[b])) ++b;
  if (right)
    while (e > b && strip_me(cs[e - 1])) --e;
  std::string out;
  for (size_t k = b; k < e; ++k) out += cs[k];
  return out;
}

std::string jinja_case(const std::string& s, bool upper) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (upper) u.toUpper(icu::Locale::getRoot());
  else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string jinja_cp_case(const std::string& ch, int how) {  // 1 upper, 0 lower, 2 title
  const uint32_t cp = jinja_cp(ch);
  const UChar32 r = how == 1 ? u_toupper(static_cast<UChar32>(cp)) : how == 2 ? u_totitle(static_cast<UChar32>(cp))
                                                                              : u_tolower(static_cast<UChar32>(cp));
  icu::UnicodeString u(r);
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool jinja_cased(const std::string& ch) { return u_hasBinaryProperty(static_cast<UChar32>(jinja_cp(ch)), UCHAR_CASED); }

// Python's str.title(): a cased character after an uncased one is titled, the others lowered.
std::string jinja_py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (const auto& c : utf8_chars(s)) {
    out += jinja_cp_case(c, prev_cased ? 0 : 2);
    prev_cased = jinja_cased(c);
  }
  return out;
}

// jinja2's title filter: each word (after whitespace, '-', '(', '{', '[' or '<') capitalized.
std::string jinja_filter_title(const std::string& s) {
  std::string out;
  bool start = true;
  for (const auto& c : utf8_chars(s)) {
    const bool sep = jinja_py_space(jinja_cp(c)) ||
                     (c.size() == 1 && (c[0] == '-' || c[0] == '(' || c[0] == '{' || c[0] == '[' || c[0] == '<'));
    if (sep) {
      out += c;
      start = true;
      continue;
    }
    out += jinja_cp_case(c, start ? 1 : 0);
    start = false;
  }
  return out;
}

std::string jinja_capitalize(const std::string& s) {
  const auto cs = utf8_chars(s);
  std::string out;
  for (size_t k = 0; k < cs.size(); ++k) out += jinja_cp_case(cs[k], k == 0 ? 2 : 0);
  return out;
}

std::string jinja_replace(Interpreter& in, const std::string& s, const std::string& old, const std::string& repl,
                          int64_t count, int line) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    const auto cs = utf8_chars(s);
    for (size_t k = 0; k <= cs.size(); ++k) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (k < cs.size()) out += cs[k];
      if (out.size() > in.limits().max_output_bytes) in.fail("replace: result too long", line);
    }
    return out;
  }
  size_t p = 0;
  while (count < 0 || done < count) {
    const size_t f = s.find(old, p);
    if (f == std::string::npos) break;
    out.append(s, p, f - p);
    out += repl;
    if (out.size() > in.limits().max_output_bytes) in.fail("replace: result too long", line);
    p = f + old.size();
    ++done;
  }
  out.append(s, p, std::string::npos);
  return out;
}

Value jinja_split(Interpreter& in, const std::string& s, const Value& sep, int64_t maxsplit, bool from_right, int line) {
  ValueList parts;
  if (sep.is_none() || sep.is_undefined()) {
    // Runs of whitespace separate; leading/trailing whitespace yields nothing.
    const auto cs = utf8_chars(s);
    std::vector<std::pair<size_t, size_t>> words;  // [b, e) in code points
    size_t k = 0;
    while (k < cs.size()) {
      while (k < cs.size() && jinja_py_space(jinja_cp(cs[k]))) ++k;
      if (k >= cs.size()) break;
      size_t b = k;
      while (k < cs.size() && !jinja_py_space(jinja_cp(cs[k]))) ++k;
      words.emplace_back(b, k);
    }
    const auto join = [&](size_t b, size_t e) {
      std::string w;
      for (size_t j = b; j < e; ++j) w += cs[j];
      return w;
    };
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto& w : words) parts.push_back(Value::string(join(w.first, w.second)));
    } else if (!from_right) {
      for (size_t j = 0; j < static_cast<size_t>(maxsplit); ++j) parts.push_back(Value::string(join(words[j].first, words[j].second)));
      size_t rest = words[static_cast<size_t>(maxsplit)].first;
      std::string tail = join(rest, cs.size());
      parts.push_back(Value::string(jinja_strip(tail, Value(), false, true)));
    } else {
      const size_t keep = words.size() - static_cast<size_t>(maxsplit);
      std::string head = join(0, words[keep - 1].second);
      parts.push_back(Value::string(jinja_strip(head, Value(), true, false)));
      for (size_t j = keep; j < words.size(); ++j) parts.push_back(Value::string(join(words[j].first, words[j].second)));
    }
    return Value::new_list(std::move(parts));
  }
  if (!sep.is_string()) in.fail("split: the separator must be a string or None", line);
  if (sep.s.empty()) in.fail("split: empty separator", line);
  std::vector<std::string> pieces;
  size_t p = 0;
  while (true) {
    const size_t f = s.find(sep.s, p);
    if (f == std::string::npos) break;
    pieces.push_back(s.substr(p, f - p));
    p = f + sep.s.size();
  }
  pieces.push_back(s.substr(p));
  if (maxsplit >= 0 && pieces.size() > static_cast<size_t>(maxsplit) + 1) {
    std::vector<std::string> merged;
    const size_t n = static_cast<size_t>(maxsplit);
    if (!from_right) {
      merged.assign(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(n));
      std::string rest;
      for (size_t j = n; j < pieces.size(); ++j) rest += (j > n ? sep.s : "") + pieces[j];
      merged.push_back(rest);
    } else {
      const size_t cut = pieces.size() - n;
      std::string head;
      for (size_t j = 0; j < cut; ++j) head += (j ? sep.s : "") + pieces[j];
      merged.push_back(head);
      merged.insert(merged.end(), pieces.begin() + static_cast<std::ptrdiff_t>(cut), pieces.end());
    }
    pieces = std::move(merged);
  }
  for (auto& x : pieces) parts.push_back(Value::string(std::move(x)));
  return Value::new_list(std::move(parts));
}

std::string jinja_html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// ------------------------------------------------------------------ sequence helpers

// The items a filter iterates: a list's elements, a dict's keys, a string's characters.
ValueList jinja_iter(Interpreter& in, const Value& v, const char* who, int line) {
  switch (v.kind) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return *v.list;
    case Value::Kind::Dict: {
      if (v.is_namespace) break;
      ValueList keys;
      for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::String: {
      ValueList cs;
      for (auto& c : utf8_chars(v.s)) cs.push_back(Value::string(c));
      return cs;
    }
    default: break;
  }
  in.fail(std::string(who) + ": '" + v.type_name() + "' object is not iterable", line);
}

// jinja2's attribute getter: "a.b.0" looks up a, then b, then index 0.
Value jinja_attr_path(Interpreter& in, const Value& v, const std::string& path, int line) {
  Value cur = v;
  size_t p = 0;
  while (true) {
    const size_t dot = path.find('.', p);
    const std::string part = path.substr(p, dot == std::string::npos ? std::string::npos : dot - p);
    if (cur.is_undefined()) return cur;
    Value key = Value::string(part);
    if (!part.empty() && part.size() < 18 && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      key = Value::integer(std::strtoll(part.c_str(), nullptr, 10));
    if (cur.is_dict()) {
      const Value* f = key.is_string() ? cur.dict->find(part) : nullptr;
      cur = f ? *f : Value::undefined("'dict object' has no attribute '" + part + "'");
    } else if (cur.is_list() && key.kind == Value::Kind::Int) {
      int64_t i = key.i;
      cur = i < static_cast<int64_t>(cur.list->size()) ? (*cur.list)[static_cast<size_t>(i)] : Value::undefined();
    } else {
      cur = Value::undefined(std::string("'") + cur.type_name() + " object' has no attribute '" + part + "'");
    }
    if (dot == std::string::npos) return cur;
    p = dot + 1;
  }
  (void)in;
  (void)line;
}

Value jinja_sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(jinja_case(v.s, false));
  return v;
}

bool jinja_lt(Interpreter& in, const Value& a, const Value& b, int line) {
  bool ok = true;
  const bool r = less(a, b, &ok);
  if (!ok) in.fail(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() + "'", line);
  return r;
}

int64_t jinja_to_int(const Value& v, int64_t dflt, int64_t base) {
  switch (v.kind) {
    case Value::Kind::Bool:
    case Value::Kind::Int: return v.as_int();
    case Value::Kind::Float:
      if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) return dflt;
      return static_cast<int64_t>(v.f);
    case Value::Kind::String: {
      std::string t = jinja_strip(v.s, Value(), true, true);
      std::string digits;
      for (char c : t)
        if (c != '_') digits += c;
      if (!digits.empty()) {
        errno = 0;
        char* end = nullptr;
        const long long r = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
        if (errno == 0 && end && *end == '\0') return r;
        // int("3.5") fails in Python; jinja2 then tries int(float(s)).
        end = nullptr;
        const double d = std::strtod(t.c_str(), &end);
        if (end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
      }
      return dflt;
    }
    default: return dflt;
  }
}

}  // namespace

bool is_builtin_filter(const std::string& name) { return filter_names().count(name) > 0; }
bool is_builtin_test(const std::string& name) { return test_names().count(name) > 0; }
bool is_builtin_global(const std::string& name) {
  return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" || name == "strftime_now";
}
bool is_builtin_method(const std::string& name) { return method_names().count(name) > 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  const int line = args.line;
  const auto arg = [&](size_t k) {
    if (k >= args.pos.size()) in.fail("test '" + name + "' needs an argument", line);
    return args.pos[k];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == Value::Kind::Bool;
  if (name == "false") return v.kind == Value::Kind::Bool && !v.b;
  if (name == "true") return v.kind == Value::Kind::Bool && v.b;
  if (name == "integer") return v.kind == Value::Kind::Int;
  if (name == "float") return v.kind == Value::Kind::Float;
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.is_namespace;
  if (name == "iterable") return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace) || v.is_undefined();
  if (name == "sequence") return v.is_list() || v.is_string() || (v.is_dict() && !v.is_namespace) || v.is_undefined();
  if (name == "callable") return v.kind == Value::Kind::Function;
  if (name == "sameas") {
    const Value o = arg(0);
    if (v.kind != o.kind) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.kind == Value::Kind::Bool) return v.b == o.b;
    if (v.is_list()) return v.list == o.list;
    if (v.is_dict()) return v.dict == o.dict;
    return false;
  }
  if (name == "in") return contains(in, arg(0), v, line);
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg(0));
  if (name == "ne" || name == "!=") return !equals(v, arg(0));
  if (name == "lt" || name == "lessthan" || name == "<") return jinja_lt(in, v, arg(0), line);
  if (name == "gt" || name == "greaterthan" || name == ">") return jinja_lt(in, arg(0), v, line);
  if (name == "le" || name == "<=") return !jinja_lt(in, arg(0), v, line);
  if (name == "ge" || name == ">=") return !jinja_lt(in, v, arg(0), line);
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool) in.fail("test '" + name + "' needs an integer", line);
    if (name == "divisibleby") {
      const Value d = arg(0);
      if (d.kind != Value::Kind::Int || d.i == 0) in.fail("divisibleby needs a non-zero integer", line);
      return v.as_int() % d.i == 0;
    }
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) in.fail("test '" + name + "' needs a string", line);
    return jinja_case(v.s, name == "upper") == v.s;
  }
  in.fail("unknown test '" + name + "'", line);
}

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args) {
  const int line = args.line;
  const auto need_string = [&](const Value& x) -> std::string {
    return x.str();  // jinja2's string filters take str(value) (Undefined is "")
  };
  if (name == "default" || name == "d") {
    const Value dflt = args.get(0, "default_value", Value::string(""));
    const bool boolean = args.get(1, "boolean", Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
    return v;
  }
  if (name == "length" || name == "count") {
    switch (v.kind) {
      case Value::Kind::Undefined: return Value::integer(0);
      case Value::Kind::String: return Value::integer(static_cast<int64_t>(utf8_chars(v.s).size()));
      case Value::Kind::List: return Value::integer(static_cast<int64_t>(v.list->size()));
      case Value::Kind::Dict:
        if (!v.is_namespace) return Value::integer(static_cast<int64_t>(v.dict->items.size()));
        break;
      default: break;
    }
    in.fail(std::string("object of type '") + v.type_name() + "' has no len()", line);
  }
  if (name == "string") return Value::string(v.str());
  if (name == "safe") return v;
  if (name == "e" || name == "escape") return Value::string(jinja_html_escape(v.str()));
  if (name == "upper" || name == "lower") return Value::string(jinja_case(need_string(v), name == "upper"));
  if (name == "capitalize") return Value::string(jinja_capitalize(need_string(v)));
  if (name == "title") return Value::string(jinja_filter_title(need_string(v)));
  if (name == "trim") return Value::string(jinja_strip(need_string(v), args.get(0, "chars", Value::none()), true, true));
  if (name == "replace") {
    const Value old = args.get(0, "old"), repl = args.get(1, "new"), count = args.get(2, "count", Value::none());
    if (!old.is_string() || !repl.is_string()) in.fail("replace needs two strings", line);
    const int64_t n = count.is_none() || count.is_undefined() ? -1 : count.as_int();
    return Value::string(jinja_replace(in, need_string(v), old.s, repl.s, n, line));
  }
  if (name == "tojson") {
    const Value ind = args.get(0, "indent", Value::none());
    int indent = -1;
    if (ind.kind == Value::Kind::Int) indent = static_cast<int>(std::clamp<int64_t>(ind.i, 0, 64));
    else if (!ind.is_none() && !ind.is_undefined()) in.fail("tojson: indent must be an integer", line);
    return Value::string(to_json(v, indent, line));
  }
  if (name == "int") {
    return Value::integer(jinja_to_int(v, args.get(0, "default", Value::integer(0)).as_int(),
                                       args.get(1, "base", Value::integer(10)).as_int()));
  }
  if (name == "float") {
    const Value dflt = args.get(0, "default", Value::number(0.0));
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string()) {
      const std::string t = jinja_strip(v.s, Value(), true, true);
      char* end = nullptr;
      const double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && end && *end == '\0') return Value::number(d);
    }
    return Value::number(dflt.as_double());
  }
  if (name == "abs") {
    if (v.kind == Value::Kind::Float) return Value::number(std::fabs(v.f));
    if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) {
      if (v.as_int() == INT64_MIN) in.fail("integer overflow in abs", line);
      return Value::integer(std::llabs(v.as_int()));
    }
    in.fail(std::string("bad operand type for abs(): '") + v.type_name() + "'", line);
  }
  if (name == "round") {
    if (!v.is_number()) in.fail("round needs a number", line);
    const int64_t prec = std::clamp<int64_t>(args.get(0, "precision", Value::integer(0)).as_int(), -15, 15);
    const std::string method = args.get(1, "method", Value::string("common")).str();
    const double scale = std::pow(10.0, static_cast<double>(prec));
    const double x = v.as_double() * scale;
    double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
    return Value::number(r / scale);
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::new_list();
    if (!v.is_dict() || v.is_namespace) in.fail(std::string("items: expected a mapping, got ") + v.type_name(), line);
    ValueList out;
    for (const auto& [k, e] : v.dict->items) out.push_back(Value::new_list({Value::string(k), e}, true));
    return Value::new_list(std::move(out));
  }
  if (name == "list") return Value::new_list(jinja_iter(in, v, "list", line));
  if (name == "first" || name == "last") {
    if (v.is_dict() && !v.is_namespace && !v.dict->items.empty())
      return Value::string(name == "first" ? v.dict->items.front().first : v.dict->items.back().first);
    const ValueList items = jinja_iter(in, v, name.c_str(), line);
    if (items.empty()) return Value::undefined("'" + name + "' of an empty sequence");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cs = utf8_chars(v.s);
      std::string out;
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    ValueList items = jinja_iter(in, v, "reverse", line);
    std::reverse(items.begin(), items.end());
    return Value::new_list(std::move(items));
  }
  if (name == "join") {
    const Value sep = args.get(0, "d", Value::string(""));
    const Value attr = args.get(1, "attribute", Value::none());
    std::string out;
    bool first = true;
    for (const Value& x : jinja_iter(in, v, "join", line)) {
      if (!first) out += sep.str();
      first = false;
      out += (attr.is_string() ? jinja_attr_path(in, x, attr.s, line) : x).str();
      if (out.size() > in.limits().max_output_bytes) in.fail("join: result too long", line);
    }
    return Value::string(std::move(out));
  }
  if (name == "map") {
    ValueList out;
    const Value attr = args.get(99, "attribute", Value::none());
    if (attr.is_string()) {
      const Value dflt = args.get(99, "default", Value::undefined());
      for (const Value& x : jinja_iter(in, v, "map", line)) {
        Value r = jinja_attr_path(in, x, attr.s, line);
        out.push_back(r.is_undefined() && !dflt.is_undefined() ? dflt : r);
      }
      return Value::new_list(std::move(out));
    }
    if (args.pos.empty() || !args.pos[0].is_string()) in.fail("map needs a filter name or attribute=", line);
    const std::string f = args.pos[0].s;
    if (!is_builtin_filter(f) || f == "map") in.fail("map: unsupported filter '" + f + "'", line);
    CallArgs rest;
    rest.line = line;
    rest.pos.assign(args.pos.begin() + 1, args.pos.end());
    rest.kw = args.kw;
    for (const Value& x : jinja_iter(in, v, "map", line)) {
      CallArgs a = rest;
      out.push_back(apply_filter(in, f, x, a));
    }
    return Value::new_list(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    const bool attr_form = name == "selectattr" || name == "rejectattr";
    const bool want = name == "select" || name == "selectattr";
    size_t k = 0;
    std::string attr;
    if (attr_form) {
      if (args.pos.empty() || !args.pos[0].is_string()) in.fail(name + " needs an attribute name", line);
      attr = args.pos[0].s;
      k = 1;
    }
    std::string test;
    if (k < args.pos.size()) {
      if (!args.pos[k].is_string() || !is_builtin_test(args.pos[k].s)) in.fail(name + ": unsupported test " + args.pos[k].repr(), line);
      test = args.pos[k].s;
      ++k;
    }
    CallArgs targs;
    targs.line = line;
    targs.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(std::min(k, args.pos.size())), args.pos.end());
    ValueList out;
    for (const Value& x : jinja_iter(in, v, name.c_str(), line)) {
      const Value subject = attr_form ? jinja_attr_path(in, x, attr, line) : x;
      CallArgs a = targs;
      const bool ok = test.empty() ? subject.truthy() : apply_test(in, test, subject, a);
      if (ok == want) out.push_back(x);
    }
    return Value::new_list(std::move(out));
  }
  if (name == "sort" || name == "unique" || name == "min" || name == "max") {
    const bool sort = name == "sort";
    const bool reverse = sort && args.get(0, "reverse", Value::boolean(false)).truthy();
    const bool cs = args.get(sort ? 1 : 0, "case_sensitive", Value::boolean(false)).truthy();
    const Value attr = args.get(sort ? 2 : 1, "attribute", Value::none());
    ValueList items = jinja_iter(in, v, name.c_str(), line);
    const auto key = [&](const Value& x) {
      return jinja_sort_key(attr.is_string() ? jinja_attr_path(in, x, attr.s, line) : x, cs);
    };
    if (name == "unique") {
      ValueList out, seen;
      for (const Value& x : items) {
        const Value kx = key(x);
        bool dup = false;
        for (const Value& s : seen) dup = dup || equals(s, kx);
        if (!dup) {
          seen.push_back(kx);
          out.push_back(x);
        }
      }
      return Value::new_list(std::move(out));
    }
    if (name == "min" || name == "max") {
      if (items.empty()) return Value::undefined("no " + name + " of an empty sequence");
      size_t best = 0;
      for (size_t j = 1; j < items.size(); ++j) {
        const bool better = name == "min" ? jinja_lt(in, key(items[j]), key(items[best]), line)
                                          : jinja_lt(in, key(items[best]), key(items[j]), line);
        if (better) best = j;
      }
      return items[best];
    }
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& x : items) keyed.emplace_back(key(x), x);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? jinja_lt(in, b.first, a.first, line) : jinja_lt(in, a.first, b.first, line);
    });
    ValueList out;
    for (auto& kx : keyed) out.push_back(kx.second);
    return Value::new_list(std::move(out));
  }
  if (name == "sum") {
    const Value attr = args.get(0, "attribute", Value::none());
    Value acc = args.get(1, "start", Value::integer(0));
    for (const Value& x : jinja_iter(in, v, "sum", line)) {
      const Value y = attr.is_string() ? jinja_attr_path(in, x, attr.s, line) : x;
      if (!acc.is_number() || !y.is_number()) in.fail("sum: the items must be numbers", line);
      if (acc.kind != Value::Kind::Float && y.kind != Value::Kind::Float) {
        int64_t r;
        if (__builtin_add_overflow(acc.as_int(), y.as_int(), &r)) in.fail("integer overflow in sum", line);
        acc = Value::integer(r);
      } else {
        acc = Value::number(acc.as_double() + y.as_double());
      }
    }
    return acc;
  }
  if (name == "indent") {
    const Value w = args.get(0, "width", Value::integer(4));
    const bool first = args.get(1, "first", Value::boolean(false)).truthy();
    const bool blank = args.get(2, "blank", Value::boolean(false)).truthy();
    std::string ind;
    if (w.is_string()) ind = w.s;
    else ind.assign(static_cast<size_t>(std::clamp<int64_t>(w.as_int(), 0, 256)), ' ');
    std::vector<std::string> lines;
    const std::string s = need_string(v) + "\n";
    size_t p = 0;
    while (p < s.size()) {
      size_t e = s.find_first_of("\r\n", p);
      if (e == std::string::npos) e = s.size();
      lines.push_back(s.substr(p, e - p));
      p = e + ((s.compare(e, 2, "\r\n") == 0) ? 2 : 1);
    }
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k > 0) out += "\n";
      if (k > 0 && (blank || !lines[k].empty())) out += ind;
      out += lines[k];
      if (out.size() > in.limits().max_output_bytes) in.fail("indent: result too long", line);
    }
    if (first) out = ind + out;
    return Value::string(std::move(out));
  }
  in.fail("unknown filter '" + name + "'", line);
}

Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args, bool* found) {
  const int line = args.line;
  *found = true;
  if (obj.is_string()) {
    const std::string& s = obj.s;
    if (name == "startswith" || name == "endswith") {
      const Value p = args.get(0, "prefix");
      ValueList options = p.is_list() && p.is_tuple ? *p.list : ValueList{p};
      for (const Value& o : options) {
        if (!o.is_string()) in.fail(name + ": expected a string or a tuple of strings", line);
        const bool hit = name == "startswith" ? s.compare(0, o.s.size(), o.s) == 0 && s.size() >= o.s.size()
                                              : s.size() >= o.s.size() && s.compare(s.size() - o.s.size(), o.s.size(), o.s) == 0;
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split" || name == "rsplit")
      return jinja_split(in, s, args.get(0, "sep", Value::none()), args.get(1, "maxsplit", Value::integer(-1)).as_int(),
                         name == "rsplit", line);
    if (name == "strip") return Value::string(jinja_strip(s, args.get(0, "chars", Value::none()), true, true));
    if (name == "lstrip") return Value::string(jinja_strip(s, args.get(0, "chars", Value::none()), true, false));
    if (name == "rstrip") return Value::string(jinja_strip(s, args.get(0, "chars", Value::none()), false, true));
    if (name == "upper" || name == "lower") return Value::string(jinja_case(s, name == "upper"));
    if (name == "title") return Value::string(jinja_py_title(s));
    if (name == "capitalize") return Value::string(jinja_capitalize(s));
    if (name == "replace") {
      const Value old = args.get(0, "old"), repl = args.get(1, "new");
      if (!old.is_string() || !repl.is_string()) in.fail("replace needs two strings", line);
      return Value::string(jinja_replace(in, s, old.s, repl.s, args.get(2, "count", Value::integer(-1)).as_int(), line));
    }
    if (name == "find" || name == "rfind" || name == "count") {
      const Value sub = args.get(0, "sub");
      if (!sub.is_string()) in.fail(name + " needs a string", line);
      if (name == "count") {
        if (sub.s.empty()) return Value::integer(static_cast<int64_t>(utf8_chars(s).size()) + 1);
        int64_t n = 0;
        for (size_t p = s.find(sub.s); p != std::string::npos; p = s.find(sub.s, p + sub.s.size())) ++n;
        return Value::integer(n);
      }
      const size_t p = name == "find" ? s.find(sub.s) : s.rfind(sub.s);
      if (p == std::string::npos) return Value::integer(-1);
      return Value::integer(static_cast<int64_t>(utf8_chars(s.substr(0, p)).size()));
    }
    if (name == "join") {
      std::string out;
      bool first = true;
      for (const Value& x : jinja_iter(in, args.get(0, "iterable"), "join", line)) {
        if (!x.is_string()) in.fail(std::string("join: expected str instance, ") + x.type_name() + " found", line);
        if (!first) out += s;
        first = false;
        out += x.s;
        if (out.size() > in.limits().max_output_bytes) in.fail("join: result too long", line);
      }
      return Value::string(std::move(out));
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
      const auto cs = utf8_chars(s);
      if (cs.empty()) return Value::boolean(false);
      for (const auto& c : cs) {
        const UChar32 cp = static_cast<UChar32>(jinja_cp(c));
        const bool ok = name == "isdigit" ? u_isdigit(cp) != 0
                        : name == "isspace" ? jinja_py_space(static_cast<uint32_t>(cp))
                        : name == "isalpha" ? u_isalpha(cp) != 0
                                            : (u_isalpha(cp) || u_isdigit(cp));
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
  } else if (obj.is_dict() && !obj.is_namespace) {
    if (name == "get") {
      const Value key = args.get(0, "key");
      const Value* v = key.is_string() ? obj.dict->find(key.s) : nullptr;
      return v ? *v : args.get(1, "default", Value::none());
    }
    if (name == "items" || name == "keys" || name == "values") {
      ValueList out;
      for (const auto& [k, e] : obj.dict->items) {
        if (name == "items") out.push_back(Value::new_list({Value::string(k), e}, true));
        else if (name == "keys") out.push_back(Value::string(k));
        else out.push_back(e);
      }
      return Value::new_list(std::move(out));
    }
  }
  *found = false;
  return Value();
}

void add_globals(ValueDict& g) {
  g.set("range", Value::function([](CallArgs& a) {
          if (a.pos.empty() || a.pos.size() > 3) throw RenderError("range() takes 1 to 3 integers", a.line);
          for (const Value& v : a.pos)
            if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)
              throw RenderError(std::string("range(): '") + v.type_name() + "' is not an integer", a.line);
          int64_t start = 0, stop, step = 1;
          if (a.pos.size() == 1) {
            stop = a.pos[0].as_int();
          } else {
            start = a.pos[0].as_int();
            stop = a.pos[1].as_int();
            if (a.pos.size() == 3) step = a.pos[2].as_int();
          }
          if (step == 0) throw RenderError("range() arg 3 must not be zero", a.line);
          ValueList out;
          // A range is materialized: a template has no use for more elements than this.
          constexpr size_t kMaxRange = 1 << 20;
          for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
            if (out.size() >= kMaxRange) throw RenderError("range() longer than 1048576 elements", a.line);
            out.push_back(Value::integer(k));
            if ((step > 0 && k > INT64_MAX - step) || (step < 0 && k < INT64_MIN - step)) break;
          }
          return Value::new_list(std::move(out));
        }));
  const auto make_dict = [](CallArgs& a, bool ns) {
    Value d = Value::new_dict();
    d.is_namespace = ns;
    if (!a.pos.empty()) {
      if (a.pos.size() > 1 || !a.pos[0].is_dict()) throw RenderError("expected a mapping and keyword arguments", a.line);
      for (const auto& kv : a.pos[0].dict->items) d.dict->set(kv.first, kv.second);
    }
    for (const auto& kv : a.kw) d.dict->set(kv.first, kv.second);
    return d;
  };
  g.set("namespace", Value::function([make_dict](CallArgs& a) { return make_dict(a, true); }));
  g.set("dict", Value::function([make_dict](CallArgs& a) { return make_dict(a, false); }));
  g.set("raise_exception", Value::function([](CallArgs& a) -> Value {
          throw RaisedError(a.pos.empty() ? std::string("raise_exception") : a.pos[0].str(), a.line);
        }));
  g.set("strftime_now", Value::function([](CallArgs& a) {
          if (a.pos.empty() || !a.pos[0].is_string()) throw RenderError("strftime_now needs a format string", a.line);
          const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
          std::tm tm{};
          localtime_r(&t, &tm);
          char buf[512];
          const size_t n = std::strftime(buf, sizeof buf, a.pos[0].s.c_str(), &tm);
          return Value::string(std::string(buf, n));
        }));
}

}  // namespace tandem::text::jinja
