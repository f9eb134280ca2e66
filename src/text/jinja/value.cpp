#include "text/jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tandem::text::jinja {

Value Value::new_list(ValueList items, bool tuple) {
  Value v;
  v.kind = Kind::List;
  v.is_tuple = tuple;
  v.list = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::new_dict() {
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::make_shared<ValueDict>();
  return v;
}

Value Value::function(NativeFunction f) {
  Value v;
  v.kind = Kind::Function;
  v.fn = std::make_shared<NativeFunction>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      // Python ints are unbounded; past int64 the value is kept as a float rather than wrapped.
      return u > static_cast<uint64_t>(INT64_MAX) ? number(static_cast<double>(u)) : integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return new_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = new_dict();
      d.dict->items.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.dict->items.emplace_back(k, from_json(e));
      return d;
    }
    default: return undefined();
  }
}

const Value* ValueDict::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
Value* ValueDict::find(const std::string& key) {
  for (auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}
void ValueDict::set(const std::string& key, Value v) {
  if (Value* slot = find(key)) {
    *slot = std::move(v);
  } else {
    items.emplace_back(key, std::move(v));
  }
}

Value CallArgs::get(size_t index, const char* name, Value fallback) const {
  for (const auto& kv : kw)
    if (kv.first == name) return kv.second;
  if (index < pos.size()) return pos[index];
  return fallback;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b;
    case Kind::Int: return i != 0;
    case Kind::Float: return f != 0;
    case Kind::String: return !s.empty();
    case Kind::List: return !list->empty();
    case Kind::Dict: return is_namespace || !dict->items.empty();
    case Kind::Function: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return is_tuple ? "tuple" : "list";
    case Kind::Dict: return is_namespace ? "Namespace" : "dict";
    case Kind::Function: return "function";
  }
  return "?";
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest %.{p}e that reads back as d: Python's repr digits.
  char buf[64];
  for (int p = 0; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string m(buf);
  const size_t epos = m.find('e');
  const int exp = std::atoi(m.c_str() + epos + 1);
  std::string digits;
  const bool neg = m[0] == '-';
  for (size_t k = neg ? 1 : 0; k < epos; ++k)
    if (m[k] != '.') digits += m[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      std::string ip = digits.substr(0, std::min(digits.size(), static_cast<size_t>(exp) + 1));
      while (ip.size() < static_cast<size_t>(exp) + 1) ip += '0';
      std::string fp = digits.size() > static_cast<size_t>(exp) + 1 ? digits.substr(exp + 1) : "0";
      out += ip + "." + fp;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += e;
  }
  return out;
}

namespace {

std::string py_string_repr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) out += std::string("\\") + static_cast<char>(q);
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(const Value& v, int indent, int depth, int line, std::string& out) {
  if (depth > 512) throw RenderError("tojson: value nested too deeply", line);
  const auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.i); return;
    case Value::Kind::Float:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(v.f);
      return;
    case Value::Kind::String: json_string(v.s, out); return;
    case Value::Kind::List: {
      if (v.list->empty()) { out += "[]"; return; }
      out += '[';
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        json_value((*v.list)[k], indent, depth + 1, line, out);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.is_namespace) break;
      if (v.dict->items.empty()) { out += "{}"; return; }
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.dict->items) {
        if (!first) out += indent >= 0 ? "," : ", ";
        first = false;
        if (indent >= 0) newline(depth + 1);
        json_string(k, out);
        out += ": ";
        json_value(e, indent, depth + 1, line, out);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
    default: break;
  }
  throw RenderError(std::string("tojson: Object of type ") + v.type_name() + " is not JSON serializable", line);
}

}  // namespace

std::string Value::repr() const {
  switch (kind) {
    case Kind::String: return py_string_repr(s);
    case Kind::List: {
      std::string out = is_tuple ? "(" : "[";
      for (size_t k = 0; k < list->size(); ++k) {
        if (k) out += ", ";
        out += (*list)[k].repr();
      }
      if (is_tuple && list->size() == 1) out += ",";
      out += is_tuple ? ")" : "]";
      return out;
    }
    case Kind::Dict: {
      std::string out = is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, e] : dict->items) {
        if (!first) out += ", ";
        first = false;
        out += py_string_repr(k) + ": " + e.repr();
      }
      return out + (is_namespace ? "}>" : "}");
    }
    default: return str();
  }
}

std::string Value::str() const {
  switch (kind) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return float_repr(f);
    case Kind::String: return s;
    case Kind::Function: return "<function>";
    default: return repr();
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.s == b.s;
    case Value::Kind::List:
      if (a.is_tuple != b.is_tuple || a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k)
        if (!equals((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case Value::Kind::Dict:
      if (a.dict == b.dict) return true;
      if (a.is_namespace || b.is_namespace || a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, e] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equals(e, *o)) return false;
      }
      return true;
    case Value::Kind::Function: return a.fn == b.fn;
    default: return false;
  }
}

bool less(const Value& a, const Value& b, bool* ok) {
  *ok = true;
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) return a.s < b.s;
  if (a.is_list() && b.is_list() && a.is_tuple == b.is_tuple) {
    const size_t n = std::min(a.list->size(), b.list->size());
    for (size_t k = 0; k < n; ++k) {
      if (equals((*a.list)[k], (*b.list)[k])) continue;
      return less((*a.list)[k], (*b.list)[k], ok);
    }
    return a.list->size() < b.list->size();
  }
  *ok = false;
  return false;
}

std::string to_json(const Value& v, int indent, int line) {
  std::string out;
  json_value(v, indent, 0, line, out);
  return out;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  size_t k = 0;
  while (k < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[k]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (k + len > s.size()) len = 1;
    for (size_t j = 1; j < len; ++j)
      if ((static_cast<unsigned char>(s[k + j]) & 0xC0) != 0x80) { len = 1; break; }
    out.push_back(s.substr(k, len));
    k += len;
  }
  return out;
}

}  // namespace tandem::text::jinja
