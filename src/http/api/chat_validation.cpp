#include "http/api/chat_validation.h"

#include <algorithm>

#include "http/api/api_error.h"

namespace tandem::http {

namespace {

constexpr const char* kStandardRoles[] = {"system", "developer", "user", "assistant", "tool"};

// A short printable rendering of a client's string for a message.
std::string shown(const std::string& s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (s.size() > 40 ? "...'" : "'");
}

[[noreturn]] void fail(const std::string& where, const std::string& what, const char* param) {
  throw bad_request("'" + where + "' " + what, param);
}

void check_optional_string(const Json& obj, const char* key, const std::string& where, const char* param) {
  const auto it = obj.find(key);
  if (it != obj.end() && !it->is_null() && !it->is_string()) fail(where + "." + key, "must be a string, got " + std::string(it->type_name()), param);
}

void check_parts(const Json& parts, const std::string& where) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const Json& p = parts[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!p.is_object()) fail(at, "must be an object ({\"type\": \"text\", \"text\": ...}), got " + std::string(p.type_name()), "messages");
    const auto ty = p.find("type");
    if (ty == p.end() || !ty->is_string())
      fail(at + ".type", "must be a string: \"text\" or \"image_url\"", "messages");
    const std::string type = ty->get<std::string>();
    if (type == "text") {
      const auto t = p.find("text");
      if (t == p.end() || !t->is_string()) fail(at + ".text", "must be a string", "messages");
    } else if (type == "image_url") {
      const auto u = p.find("image_url");
      const bool ok = u != p.end() && (u->is_string() || (u->is_object() && u->contains("url") && (*u)["url"].is_string()));
      if (!ok) fail(at + ".image_url", "must be {\"url\": \"data:image/...;base64,...\"}", "messages");
    } else if (type == "input_audio" || type == "video" || type == "video_url" || type == "file") {
      fail(at + ".type", shown(type) + " is not supported (text and image_url parts only)", "messages");
    } else {
      fail(at + ".type", shown(type) + " is not a content part type (expected \"text\" or \"image_url\")", "messages");
    }
  }
}

void check_tool_calls(const Json& calls, const std::string& where) {
  if (!calls.is_array()) fail(where, "must be an array of tool calls", "messages");
  for (size_t i = 0; i < calls.size(); ++i) {
    const Json& c = calls[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c.is_object()) fail(at, "must be an object {\"type\": \"function\", \"function\": {...}}", "messages");
    check_optional_string(c, "id", at, "messages");
    if (const auto ty = c.find("type"); ty != c.end() && !ty->is_null() && !(ty->is_string() && *ty == "function"))
      fail(at + ".type", "must be \"function\"", "messages");
    const auto f = c.find("function");
    if (f == c.end() || !f->is_object()) fail(at + ".function", "must be an object with \"name\" and \"arguments\"", "messages");
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      fail(at + ".function.name", "must be a non-empty string", "messages");
    if (const auto a = f->find("arguments"); a != f->end() && !a->is_null() && !a->is_string() && !a->is_object())
      fail(at + ".function.arguments", "must be a JSON string (or an object)", "messages");
  }
}

bool valid_function_name(const std::string& n) {
  return !n.empty() && n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

void validate_chat_messages(const Json& messages, const std::vector<std::string>& template_roles) {
  std::vector<std::string> call_ids;  // the ids of the assistant messages' tool calls so far
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) fail(at, "is not an object {\"role\": ..., \"content\": ...}: it is a " + std::string(m.type_name()), "messages");
    const auto r = m.find("role");
    if (r == m.end() || !r->is_string()) fail(at + ".role", "must be a string", "messages");
    const std::string& role = r->get_ref<const std::string&>();
    const bool known = std::find(std::begin(kStandardRoles), std::end(kStandardRoles), role) != std::end(kStandardRoles) ||
                       std::find(template_roles.begin(), template_roles.end(), role) != template_roles.end();
    if (!known) {
      std::string roles;
      for (const char* x : kStandardRoles) roles += std::string(roles.empty() ? "" : ", ") + x;
      for (const auto& x : template_roles)
        if (std::find(std::begin(kStandardRoles), std::end(kStandardRoles), x) == std::end(kStandardRoles)) roles += ", " + x;
      fail(at + ".role", shown(role) + " is not a role (expected one of " + roles + ")", "messages");
    }
    const auto c = m.find("content");
    if (c == m.end() || c->is_null()) {
      if (role != "assistant") fail(at + ".content", "is missing: only an assistant message may have none", "messages");
    } else if (c->is_array()) {
      check_parts(*c, at + ".content");
    } else if (!c->is_string()) {
      fail(at + ".content", "must be a string or an array of content parts, got " + std::string(c->type_name()), "messages");
    }
    check_optional_string(m, "name", at, "messages");
    check_optional_string(m, "reasoning_content", at, "messages");
    if (const auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (role != "assistant") fail(at + ".tool_calls", "is only allowed in an assistant message", "messages");
      check_tool_calls(*tc, at + ".tool_calls");
      for (const Json& c : *tc)
        if (const auto id = c.find("id"); id != c.end() && id->is_string()) call_ids.push_back(id->get<std::string>());
    }
    if (role == "tool") {
      check_optional_string(m, "tool_call_id", at, "messages");
      // A result answers a call the conversation made (OpenAI refuses one that does not).
      if (const auto id = m.find("tool_call_id"); id != m.end() && id->is_string() &&
                                                   std::find(call_ids.begin(), call_ids.end(), id->get<std::string>()) == call_ids.end())
        fail(at + ".tool_call_id", shown(id->get<std::string>()) + " matches no tool call \"id\" of an earlier assistant message",
             "messages");
    }
  }
}

void validate_tools(const Json& tools) {
  if (tools.is_null()) return;
  if (!tools.is_array()) fail("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) fail(at, "must be an object {\"type\": \"function\", \"function\": {...}}, got " + std::string(t.type_name()), "tools");
    const auto ty = t.find("type");
    if (ty == t.end() || !ty->is_string() || *ty != "function") fail(at + ".type", "must be \"function\"", "tools");
    const auto f = t.find("function");
    if (f == t.end() || !f->is_object()) fail(at + ".function", "must be an object with a \"name\"", "tools");
    const auto name = f->find("name");
    if (name == f->end() || !name->is_string() || !valid_function_name(name->get<std::string>()))
      fail(at + ".function.name", "must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-'", "tools");
    check_optional_string(*f, "description", at + ".function", "tools");
    for (size_t k = 0; k < i; ++k)
        if (tools[k]["function"]["name"] == *name)
          fail(at + ".function.name", shown(name->get<std::string>()) + " is also tools[" + std::to_string(k) + "]'s name", "tools");
    if (const auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
      // The arguments are an object: the schema must describe one (its properties are the
      // parameters the call formats name).
      if (!p->is_object())
        fail(at + ".function.parameters", "must be a JSON Schema object ({\"type\": \"object\", \"properties\": {...}}), got " +
                                              std::string(p->type_name()), "tools");
      if (const auto ty = p->find("type"); ty != p->end() && !(ty->is_string() && *ty == "object"))
        fail(at + ".function.parameters.type", "must be \"object\" (the arguments are a JSON object), got " + ty->dump(), "tools");
      if (const auto props = p->find("properties"); props != p->end() && !props->is_object())
        fail(at + ".function.parameters.properties", "must be an object of parameter schemas, got " + std::string(props->type_name()), "tools");
    }
    if (const auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean())
      fail(at + ".function.strict", "must be a boolean", "tools");
  }
}

}  // namespace tandem::http
