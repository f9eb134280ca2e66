#include "text/tool_calls.h"

#include "text/json_type.h"
#include "text/tag_scan.h"

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

}  // namespace

ToolCallFormat tool_call_format(ChatTemplateFamily f) {
  switch (f) {
    case ChatTemplateFamily::Qwen35: return ToolCallFormat::Xml;
    case ChatTemplateFamily::Qwen3:
    case ChatTemplateFamily::Granite4: return ToolCallFormat::Json;
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
  const size_t at = held_.find(kCallOpen);
  // Before a call the blanks are held: they are dropped if the calls parse.
  const size_t settled = at == std::string::npos ? settled_before_tag(held_, kCallOpen)
                                                 : without_trailing_blanks(std::string_view(held_).substr(0, at));
  content.append(held_, 0, settled);
  held_.erase(0, settled);
  if (at != std::string::npos) {
    in_calls_ = true;
    calls_at_ = at - settled;
  }
}

std::vector<ToolCall> ToolCallSplitter::finish(std::string& content) {
  std::vector<ToolCall> calls;
  if (in_calls_) calls = parse_calls(std::string_view(held_).substr(calls_at_), format_, tools_);
  if (calls.empty()) content.append(held_);
  held_.clear();
  in_calls_ = false;
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
