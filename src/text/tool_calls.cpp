#include "text/tool_calls.h"

#include "text/json_type.h"
#include "text/tag_scan.h"
#include "text/utf8.h"

#include <cctype>

namespace tandem::text {

namespace {

constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";

// The request's function named `name`, or null.
const Json* find_function(const Json& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const Json& t : tools) {
    const Json& f = t.is_object() && t.contains("function") ? t["function"] : t;
    const auto n = f.is_object() ? f.find("name") : f.end();
    if (n != f.end() && n->is_string() && n->get_ref<const std::string&>() == name) return &f;
  }
  return nullptr;
}

const Json* parameters_of(const Json& function) {
  const auto p = function.find("parameters");
  return p != function.end() && p->is_object() ? &*p : nullptr;
}

const Json* property_schema(const Json& function, const std::string& name) {
  const Json* params = parameters_of(function);
  if (!params) return nullptr;
  const auto props = params->find("properties");
  if (props == params->end() || !props->is_object()) return nullptr;
  const auto s = props->find(name);
  return s != props->end() && s->is_object() ? &*s : nullptr;
}

// A schema's "type": one name or a list of them (none: any).
std::vector<std::string_view> schema_types(const Json* schema) {
  std::vector<std::string_view> out;
  if (!schema) return out;
  const auto t = schema->find("type");
  if (t == schema->end()) return out;
  if (t->is_string()) out.push_back(t->get_ref<const std::string&>());
  if (t->is_array())
    for (const Json& e : *t)
      if (e.is_string()) out.push_back(e.get_ref<const std::string&>());
  return out;
}

// The arguments name only values their schema types allow, and every required parameter.
bool arguments_fit(const Json& function, const Json& args) {
  for (const auto& [name, value] : args.items()) {
    const std::vector<std::string_view> types = schema_types(property_schema(function, name));
    bool ok = types.empty();
    for (std::string_view t : types) ok = ok || json_has_type(value, t);
    if (!ok) return false;
  }
  const Json* params = parameters_of(function);
  if (!params) return true;
  const auto required = params->find("required");
  if (required != params->end() && required->is_array())
    for (const Json& r : *required)
      if (r.is_string() && !args.contains(r.get_ref<const std::string&>())) return false;
  return true;
}

// A cursor over the calls' text.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_blanks() { pos_ += leading_blanks(s_.substr(pos_)); }
  bool take(std::string_view literal) {
    if (!s_.substr(pos_).starts_with(literal)) return false;
    pos_ += literal.size();
    return true;
  }
  // The text up to `literal`, which is consumed too; nullopt when it does not follow.
  std::optional<std::string_view> until(std::string_view literal) {
    const size_t at = s_.find(literal, pos_);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string_view text = s_.substr(pos_, at - pos_);
    pos_ = at + literal.size();
    return text;
  }
  std::string_view rest() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// A name inside a tag (<function=NAME>, <parameter=NAME>): not empty, on one line.
std::optional<std::string> tag_name(Cursor& c) {
  const auto name = c.until(">");
  if (!name || name->empty() || name->find('\n') != std::string_view::npos) return std::nullopt;
  return std::string(*name);
}

std::string compact(const Json& args) { return args.dump(-1, ' ', false, Json::error_handler_t::replace); }

// After <tool_call>: <function=NAME> (<parameter=P>\nVALUE\n</parameter>)* </function> </tool_call>.
std::optional<ToolCall> xml_call(Cursor& c, const Json& tools) {
  c.skip_blanks();
  if (!c.take("<function=")) return std::nullopt;
  const auto name = tag_name(c);
  const Json* function = name ? find_function(tools, *name) : nullptr;
  if (!function) return std::nullopt;
  Json args = Json::object();
  for (;;) {
    c.skip_blanks();
    if (c.take("</function>")) break;
    if (!c.take("<parameter=")) return std::nullopt;
    const auto param = tag_name(c);
    const auto text = param ? c.until("</parameter>") : std::nullopt;
    if (!text || args.contains(*param)) return std::nullopt;
    std::string_view v = *text;  // the template writes the value on lines of its own
    if (v.starts_with('\n')) v.remove_prefix(1);
    if (v.ends_with('\n')) v.remove_suffix(1);
    auto value = tool_call_value(std::string(v), property_schema(*function, *param));
    if (!value) return std::nullopt;
    args[*param] = std::move(*value);
  }
  c.skip_blanks();
  if (!c.take(kCallClose) || !arguments_fit(*function, args)) return std::nullopt;
  return ToolCall{*name, compact(args)};
}

// After <tool_call>: {"name": NAME, "arguments": {...}} </tool_call>; the arguments may be a
// string holding the object (as the Qwen3 template renders a string's arguments).
std::optional<ToolCall> json_call(Cursor& c, const Json& tools) {
  const auto inner = c.until(kCallClose);
  if (!inner) return std::nullopt;
  const Json j = Json::parse(inner->begin(), inner->end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const std::string& name = j["name"].get_ref<const std::string&>();
  const Json* function = find_function(tools, name);
  if (!function) return std::nullopt;
  Json args = j.contains("arguments") ? j["arguments"] : Json::object();
  if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object() || !arguments_fit(*function, args)) return std::nullopt;
  return ToolCall{name, compact(args)};
}

// The calls' text, from its first <tool_call>: every call, or none when one is broken or
// something other than whitespace follows them.
std::vector<ToolCall> parse_calls(std::string_view text, ToolCallFormat format, const Json& tools) {
  std::vector<ToolCall> calls;
  Cursor c(text);
  for (c.skip_blanks(); !c.at_end(); c.skip_blanks()) {
    if (!c.take(kCallOpen)) return {};
    auto call = format == ToolCallFormat::Xml ? xml_call(c, tools) : json_call(c, tools);
    if (!call) return {};
    calls.push_back(std::move(*call));
  }
  return calls;
}

// ---- LFM2's Pythonic calls: [name(key=value, ...), ...] with Python literal values. ----

constexpr std::string_view kPyCallOpen = "<|tool_call_start|>";
constexpr std::string_view kPyCallClose = "<|tool_call_end|>";

// A recursive-descent reader of the Python literals LFM2 writes (and the JSON ones Tandem's LFM2
// template renders: true / false / null), each as the JSON value it stands for.
class PythonReader {
 public:
  explicit PythonReader(std::string_view s) : s_(s) {}
  size_t pos() const { return pos_; }
  void blanks() { pos_ += leading_blanks(s_.substr(pos_)); }
  bool take(char c) {
    blanks();
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool peek(char c) {
    blanks();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  // A Python identifier (a function or keyword name); dots and dashes too, as tool names have them.
  std::optional<std::string> name() {
    blanks();
    const size_t from = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                s_[pos_] == '.' || s_[pos_] == '-'))
      ++pos_;
    if (pos_ == from) return std::nullopt;
    return std::string(s_.substr(from, pos_ - from));
  }
  // Nesting is bounded so that a hostile answer cannot overflow the stack.
  std::optional<Json> value(int depth = 0) {
    if (depth > 64) return std::nullopt;
    blanks();
    if (pos_ >= s_.size()) return std::nullopt;
    const char c = s_[pos_];
    if (c == '"' || c == '\'') {
      auto s = string();
      return s ? std::optional<Json>(Json(std::move(*s))) : std::nullopt;
    }
    if (c == '[' || c == '(') return list(c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(depth);
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return number();
    const auto word = name();
    if (!word) return std::nullopt;
    if (*word == "True" || *word == "true") return Json(true);
    if (*word == "False" || *word == "false") return Json(false);
    if (*word == "None" || *word == "null") return Json(nullptr);
    return std::nullopt;
  }

 private:
  std::optional<std::string> string() {
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == quote) return out;
      if (c == '\n') return std::nullopt;  // a Python string literal ends on its line
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      const char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case '0': out += '\0'; break;
        case '\\': case '\'': case '"': case '/': out += e; break;
        case 'x': case 'u': case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > s_.size()) return std::nullopt;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = s_[pos_ + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) return std::nullopt;
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
          }
          pos_ += n;
          append_utf8(out, cp);  // a lone surrogate or a code point out of range becomes U+FFFD
          break;
        }
        default: out += '\\'; out += e;  // Python keeps an unknown escape as written
      }
    }
    return std::nullopt;
  }
  std::optional<Json> number() {
    const size_t from = pos_;
    if (s_[pos_] == '+') ++pos_;  // JSON has no leading plus; Python does
    const size_t digits = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                ((s_[pos_] == '-' || s_[pos_] == '+') && pos_ > from && (s_[pos_ - 1] | 0x20) == 'e') ||
                                (s_[pos_] == '-' && pos_ == from)))
      ++pos_;
    std::string text(s_.substr(digits, pos_ - digits));
    if (text.starts_with('.')) text.insert(0, "0");  // Python's .5
    if (text.starts_with("-.")) text.insert(1, "0");
    if (text.ends_with('.')) text += '0';            // Python's 5.
    const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_number()) return std::nullopt;
    return j;
  }
  std::optional<Json> list(char close, int depth) {
    ++pos_;
    Json out = Json::array();
    while (!take(close)) {
      if (!out.empty() && !take(',')) return std::nullopt;
      if (take(close)) break;  // a trailing comma
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      out.push_back(std::move(*v));
    }
    return out;
  }
  std::optional<Json> dict(int depth) {
    ++pos_;
    Json out = Json::object();
    bool first = true;
    while (!take('}')) {
      if (!first && !take(',')) return std::nullopt;
      first = false;
      if (take('}')) break;
      blanks();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return std::nullopt;  // JSON keys: strings
      auto key = string();
      if (!key || !take(':')) return std::nullopt;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      out[*key] = std::move(*v);
    }
    return out;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// One call after its list's "[" or ", ": NAME(KEY=VALUE, ...), the function one of the tools and
// the keyword arguments fitting its schema.
std::optional<ToolCall> python_call(PythonReader& r, const Json& tools) {
  const auto name = r.name();
  const Json* function = name ? find_function(tools, *name) : nullptr;
  if (!function || !r.take('(')) return std::nullopt;
  Json args = Json::object();
  while (!r.take(')')) {
    if (!args.empty() && !r.take(',')) return std::nullopt;
    if (r.take(')')) break;  // a trailing comma
    const auto key = r.name();
    if (!key || args.contains(*key) || !r.take('=')) return std::nullopt;
    auto v = r.value();
    if (!v) return std::nullopt;
    args[*key] = std::move(*v);
  }
  if (!arguments_fit(*function, args)) return std::nullopt;
  return ToolCall{*name, compact(args)};
}

// The text from the first <|tool_call_start|>: one or more [calls] blocks, each
// <|tool_call_start|>[CALL, CALL, ...]<|tool_call_end|>, blanks between them; what follows them is
// content (LFM2's template renders a turn's content after its calls). Every call or none.
std::vector<ToolCall> parse_python_calls(std::string_view text, const Json& tools, std::string& rest) {
  std::vector<ToolCall> calls;
  Cursor c(text);
  c.skip_blanks();
  while (c.take(kPyCallOpen)) {
    const auto inner = c.until(kPyCallClose);
    if (!inner) return {};
    PythonReader r(*inner);
    if (!r.take('[')) return {};
    bool first = true;
    while (!r.take(']')) {
      if (!first && !r.take(',')) return {};
      first = false;
      auto call = python_call(r, tools);
      if (!call) return {};
      calls.push_back(std::move(*call));
    }
    r.blanks();
    if (r.pos() != inner->size() || first) return {};  // nothing after "]"; an empty list is no call
    c.skip_blanks();
  }
  rest = std::string(c.rest());
  return calls;
}

// The tag that opens the calls in the format.
std::string_view call_open_tag(ToolCallFormat f) { return f == ToolCallFormat::Python ? kPyCallOpen : kCallOpen; }

}  // namespace

ToolCallFormat tool_call_format(ChatTemplateFamily f) {
  switch (f) {
    case ChatTemplateFamily::Qwen35: return ToolCallFormat::Xml;
    case ChatTemplateFamily::Qwen3:
    case ChatTemplateFamily::Granite4: return ToolCallFormat::Json;
    case ChatTemplateFamily::LFM2: return ToolCallFormat::Python;
    default: return ToolCallFormat::None;
  }
}

std::optional<Json> tool_call_value(const std::string& text, const Json* schema) {
  const std::vector<std::string_view> types = schema_types(schema);
  const Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (types.empty()) return parsed.is_discarded() ? Json(text) : parsed;
  for (std::string_view t : types)
    if (t == "string") return Json(text);  // the text as written, whatever else it could be
  for (std::string_view t : types) {
    if (t == "boolean" && (text == "true" || text == "True")) return Json(true);
    if (t == "boolean" && (text == "false" || text == "False")) return Json(false);
    if (t == "null" && (text == "null" || text == "None")) return Json(nullptr);
    if (t != "boolean" && t != "null" && !parsed.is_discarded() && json_has_type(parsed, t)) return parsed;
  }
  return std::nullopt;
}

ToolCallSplitter::ToolCallSplitter(ToolCallFormat format, const Json& tools) : format_(format), tools_(tools) {}

void ToolCallSplitter::push(std::string_view piece, std::string& content) {
  if (format_ == ToolCallFormat::None) {
    content.append(piece);
    return;
  }
  held_.append(piece);
  if (in_calls_) return;
  const std::string_view open = call_open_tag(format_);
  const size_t at = held_.find(open);
  // Before a call the blanks are held: they are dropped if the calls parse.
  const size_t settled = at == std::string::npos ? settled_before_tag(held_, open)
                                                 : without_trailing_blanks(std::string_view(held_).substr(0, at));
  content.append(held_, 0, settled);
  released_ = released_ || settled > 0;
  held_.erase(0, settled);
  if (at != std::string::npos) {
    in_calls_ = true;
    calls_at_ = at - settled;
  }
}

std::vector<ToolCall> ToolCallSplitter::finish(std::string& content) {
  std::vector<ToolCall> calls;
  std::string rest;
  if (in_calls_ && format_ == ToolCallFormat::Python)
    calls = parse_python_calls(std::string_view(held_).substr(calls_at_), tools_, rest);
  else if (in_calls_)
    calls = parse_calls(std::string_view(held_).substr(calls_at_), format_, tools_);
  if (calls.empty()) content.append(held_);
  // LFM2: the text after the calls is content, after the blanks that came before the calls when
  // there was content before them.
  else if (!rest.empty()) content.append(!released_ ? std::string_view() : std::string_view(held_).substr(0, calls_at_)).append(rest);
  held_.clear();
  in_calls_ = false;
  released_ = false;
  return calls;
}

ToolCallAnswer parse_tool_calls(std::string_view answer, ToolCallFormat format, const Json& tools) {
  ToolCallAnswer out;
  ToolCallSplitter s(format, tools);
  s.push(answer, out.content);
  out.calls = s.finish(out.content);
  return out;
}

}  // namespace tandem::text
