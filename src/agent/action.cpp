#include "agent/action.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

namespace tandem::agent {

using ojson = nlohmann::ordered_json;

namespace {

struct KindName {
  ActionKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {
    {ActionKind::Tap, "tap"},         {ActionKind::LongPress, "long_press"}, {ActionKind::Input, "input"},
    {ActionKind::Scroll, "scroll"},   {ActionKind::Swipe, "swipe"},          {ActionKind::Back, "back"},
    {ActionKind::Home, "home"},       {ActionKind::OpenApp, "open_app"},     {ActionKind::Wait, "wait"},
    {ActionKind::Finish, "finish"},
};
constexpr std::string_view kDirections[] = {"up", "down", "left", "right"};
constexpr std::string_view kStatuses[] = {"success", "failure", "infeasible"};

std::string quote_str(std::string_view s, size_t max = 40) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  return out + "\"";
}

std::string type_name(const ojson& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number " + v.dump();
  return v.type_name();
}

// Deepest bracket nesting outside strings (the parser would otherwise build, and recursively
// destroy, whatever an adversarial output nests).
int nesting_depth(std::string_view s) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escape = false;
  for (char c : s) {
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
    else if (c == '}' || c == ']') --depth;
  }
  return max_depth;
}

std::string_view trim(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

bool hex4(std::string_view s, size_t at, unsigned& v) {
  if (at + 4 > s.size()) return false;
  v = 0;
  for (size_t i = at; i < at + 4; ++i) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + static_cast<unsigned>(d);
  }
  return true;
}

// Rewrites every lone surrogate escape inside a string literal (a high one not followed by a low
// one, a low one not preceded by a high one) as \ufffd, in place (both six bytes). JSON's grammar
// admits them (RFC 8259 §8.2), so the schema's string rule does too; the JSON library refuses
// them. Returns false when there were none.
bool replace_lone_surrogates(std::string& s) {
  bool changed = false, in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '"') {
      in_string = false;
      continue;
    }
    if (c != '\\' || i + 1 >= s.size()) continue;
    if (s[i + 1] != 'u') {
      ++i;  // a two-character escape (\" included)
      continue;
    }
    unsigned v = 0;
    if (!hex4(s, i + 2, v)) continue;  // malformed: the JSON parser reports it
    if (v >= 0xD800 && v <= 0xDBFF) {
      unsigned low = 0;
      if (i + 7 < s.size() && s[i + 6] == '\\' && s[i + 7] == 'u' && hex4(s, i + 8, low) && low >= 0xDC00 && low <= 0xDFFF) {
        i += 11;  // a pair
        continue;
      }
    } else if (!(v >= 0xDC00 && v <= 0xDFFF)) {
      i += 5;
      continue;
    }
    s.replace(i, 6, "\\ufffd");
    changed = true;
    i += 5;
  }
  return changed;
}

// Validation of one parsed object; throws std::string (caught in parse_action).
class Checker {
 public:
  Checker(const ojson& obj, std::string_view kind, const ParseOptions& opt) : obj_(obj), kind_(kind), opt_(opt) {}

  void allow(std::initializer_list<std::string_view> keys) {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      bool ok = it.key() == "action";
      for (auto k : keys) ok = ok || it.key() == k;
      if (!ok) {
        std::string list = "action";
        for (auto k : keys) list += ", " + std::string(k);
        fail("unknown key " + quote_str(it.key()) + " for \"" + std::string(kind_) + "\" (allowed: " + list + ")");
      }
    }
  }
  bool has(const char* key) const { return obj_.contains(key); }

  int64_t index(bool required) {
    if (!has("index")) {
      if (required) fail("\"" + std::string(kind_) + "\" needs \"index\" (the control's number)");
      return -1;
    }
    const ojson& v = obj_["index"];
    if (!v.is_number_integer()) fail("\"index\" must be an integer, got " + type_name(v));
    if (v.is_number_unsigned() ? false : v.get<int64_t>() < 0)
      fail("\"index\" must be >= 0, got " + v.dump());
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail("\"index\" is out of range: " + v.dump());
    const int64_t i = v.get<int64_t>();
    if (opt_.n_controls >= 0 && i >= opt_.n_controls)
      fail("\"index\" " + std::to_string(i) + " is not on the screen (controls 0.." +
           std::to_string(opt_.n_controls - 1) + ")");
    return i;
  }

  std::string string(const char* key, bool required, bool non_empty) {
    if (!has(key)) {
      if (required) fail("\"" + std::string(kind_) + "\" needs \"" + key + "\"");
      return {};
    }
    const ojson& v = obj_[key];
    if (!v.is_string()) fail("\"" + std::string(key) + "\" must be a string, got " + type_name(v));
    std::string s = v.get<std::string>();
    if (non_empty && trim(s).empty()) fail("\"" + std::string(key) + "\" must not be empty");
    return s;
  }

  template <size_t N>
  size_t one_of(const char* key, const std::string_view (&names)[N]) {
    const std::string s = string(key, true, false);
    for (size_t i = 0; i < N; ++i)
      if (s == names[i]) return i;
    std::string list;
    for (size_t i = 0; i < N; ++i) list += (i ? ", " : "") + std::string(names[i]);
    fail("\"" + std::string(key) + "\" must be one of " + list + "; got " + quote_str(s));
  }

  std::array<int64_t, 2> point(const char* key) {
    const ojson& v = obj_[key];
    if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
      fail("\"" + std::string(key) + "\" must be [x, y] with integer pixel coordinates, got " + v.dump());
    std::array<int64_t, 2> p{};
    for (size_t i = 0; i < 2; ++i) {
      if (!v[i].is_number_unsigned() && v[i].get<int64_t>() < 0)
        fail("\"" + std::string(key) + "\" coordinates must be >= 0, got " + v.dump());
      if (v[i].get<uint64_t>() > 100000) fail("\"" + std::string(key) + "\" coordinates are out of range: " + v.dump());
      p[i] = v[i].get<int64_t>();
    }
    return p;
  }

  double seconds() {
    const ojson& v = obj_["seconds"];
    if (!v.is_number()) fail("\"seconds\" must be a number, got " + type_name(v));
    const double s = v.get<double>();
    if (!(s > 0 && s <= 60)) fail("\"seconds\" must be in (0, 60], got " + v.dump());
    return s;
  }

  [[noreturn]] static void fail(std::string msg) { throw msg; }

 private:
  const ojson& obj_;
  std::string_view kind_;
  const ParseOptions& opt_;
};

Action check(const ojson& obj, const ParseOptions& opt) {
  if (!obj.is_object()) Checker::fail("expected a JSON object, got " + std::string(obj.type_name()));
  if (!obj.contains("action")) Checker::fail("missing \"action\" (one of tap, long_press, input, scroll, swipe, back, home, open_app, wait, finish)");
  const ojson& av = obj["action"];
  if (!av.is_string()) Checker::fail("\"action\" must be a string, got " + type_name(av));
  std::string name = av.get<std::string>();
  if (name == "click") name = "tap";
  Action a;
  bool known = false;
  for (const auto& k : kKinds)
    if (k.name == name) {
      a.kind = k.kind;
      known = true;
    }
  if (!known)
    Checker::fail("unknown action " + quote_str(name) +
                  " (expected one of tap, long_press, input, scroll, swipe, back, home, open_app, wait, finish)");
  Checker c(obj, name, opt);
  switch (a.kind) {
    case ActionKind::Tap:
    case ActionKind::LongPress:
      c.allow({"index"});
      a.index = c.index(true);
      break;
    case ActionKind::Input:
      c.allow({"index", "text"});
      a.index = c.index(false);
      a.text = c.string("text", true, false);
      break;
    case ActionKind::Scroll:
      c.allow({"direction", "index"});
      a.direction = static_cast<Direction>(c.one_of("direction", kDirections));
      a.index = c.index(false);
      break;
    case ActionKind::Swipe:
      c.allow({"direction", "from", "to"});
      if (c.has("direction")) {
        if (c.has("from") || c.has("to")) Checker::fail("\"swipe\" takes either \"direction\" or \"from\"/\"to\", not both");
        a.direction = static_cast<Direction>(c.one_of("direction", kDirections));
      } else {
        if (!c.has("from") || !c.has("to")) Checker::fail("\"swipe\" needs \"direction\", or both \"from\" and \"to\"");
        a.has_points = true;
        a.from = c.point("from");
        a.to = c.point("to");
      }
      break;
    case ActionKind::Back:
    case ActionKind::Home:
      c.allow({});
      break;
    case ActionKind::OpenApp:
      c.allow({"app"});
      a.text = c.string("app", true, true);
      break;
    case ActionKind::Wait:
      c.allow({"seconds"});
      if (c.has("seconds")) a.seconds = c.seconds();
      break;
    case ActionKind::Finish:
      c.allow({"status", "message"});
      a.status = static_cast<FinishStatus>(c.one_of("status", kStatuses));
      a.text = c.string("message", false, false);
      break;
  }
  return a;
}

}  // namespace

std::string_view to_string(ActionKind k) {
  for (const auto& e : kKinds)
    if (e.kind == k) return e.name;
  return "?";
}
std::string_view to_string(Direction d) { return kDirections[static_cast<size_t>(d)]; }
std::string_view to_string(FinishStatus s) { return kStatuses[static_cast<size_t>(s)]; }

ojson to_json(const Action& a) {
  ojson j;
  j["action"] = std::string(to_string(a.kind));
  switch (a.kind) {
    case ActionKind::Tap:
    case ActionKind::LongPress:
      j["index"] = a.index;
      break;
    case ActionKind::Input:
      if (a.index >= 0) j["index"] = a.index;
      j["text"] = a.text;
      break;
    case ActionKind::Scroll:
      j["direction"] = std::string(to_string(a.direction));
      if (a.index >= 0) j["index"] = a.index;
      break;
    case ActionKind::Swipe:
      if (a.has_points) {
        j["from"] = a.from;
        j["to"] = a.to;
      } else {
        j["direction"] = std::string(to_string(a.direction));
      }
      break;
    case ActionKind::Back:
    case ActionKind::Home:
      break;
    case ActionKind::OpenApp:
      j["app"] = a.text;
      break;
    case ActionKind::Wait:
      // Whole seconds as an integer ("seconds":2, not 2.0): what a model writes, and what the
      // shipped schema (integer 1..60) admits.
      if (a.seconds > 0 && a.seconds == std::floor(a.seconds) && a.seconds <= 60)
        j["seconds"] = static_cast<int64_t>(a.seconds);
      else if (a.seconds > 0)
        j["seconds"] = a.seconds;
      break;
    case ActionKind::Finish:
      j["status"] = std::string(to_string(a.status));
      if (!a.text.empty()) j["message"] = a.text;
      break;
  }
  return j;
}

std::string to_text(const Action& a) { return to_json(a).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string describe(const Action& a, std::string_view label) {
  std::string s(to_string(a.kind));
  auto target = [&] {
    if (a.index >= 0) s += " [" + std::to_string(a.index) + "]";
    if (!label.empty()) s += " \"" + std::string(label) + "\"";
  };
  switch (a.kind) {
    case ActionKind::Tap:
    case ActionKind::LongPress:
      target();
      break;
    case ActionKind::Input:
      target();
      s += " text \"" + a.text + "\"";
      break;
    case ActionKind::Scroll:
      s += " " + std::string(to_string(a.direction));
      target();
      break;
    case ActionKind::Swipe:
      if (a.has_points)
        s += " (" + std::to_string(a.from[0]) + "," + std::to_string(a.from[1]) + ") -> (" + std::to_string(a.to[0]) +
             "," + std::to_string(a.to[1]) + ")";
      else
        s += " " + std::string(to_string(a.direction));
      break;
    case ActionKind::Back:
    case ActionKind::Home:
      break;
    case ActionKind::OpenApp:
      s += " \"" + a.text + "\"";
      break;
    case ActionKind::Wait:
      if (a.seconds > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %gs", a.seconds);
        s += buf;
      }
      break;
    case ActionKind::Finish:
      s += " " + std::string(to_string(a.status));
      if (!a.text.empty()) s += " \"" + a.text + "\"";
      break;
  }
  return s;
}

ParseResult parse_action(std::string_view output, const ParseOptions& opt) noexcept {
  ParseResult r;
  try {
    if (output.size() > opt.max_bytes) {
      r.error = "output is " + std::to_string(output.size()) + " bytes (more than " + std::to_string(opt.max_bytes) +
                "): not a single action";
      return r;
    }
    std::string_view s = trim(output);
    if (s.empty()) {
      r.error = "empty output (expected one JSON action object)";
      return r;
    }
    if (s.substr(0, 3) == "```") {
      if (!opt.allow_fence) {
        r.error = "a code fence around the JSON object is not allowed";
        return r;
      }
      const size_t nl = s.find('\n');
      const std::string_view lang = nl == std::string_view::npos ? s.substr(3) : trim(s.substr(3, nl - 3));
      if (nl == std::string_view::npos || !(lang.empty() || lang == "json")) {
        r.error = "malformed code fence (expected ```json, the object, then ```)";
        return r;
      }
      s = s.substr(nl + 1);
      const std::string_view body = trim(s);
      if (body.size() < 3 || body.substr(body.size() - 3) != "```") {
        r.error = "unterminated code fence (missing closing ```)";
        return r;
      }
      s = trim(body.substr(0, body.size() - 3));
      if (s.find("```") != std::string_view::npos) {
        r.error = "more than one code fence";
        return r;
      }
    }
    if (s.find('\0') != std::string_view::npos) {
      r.error = "output contains a NUL byte";
      return r;
    }
    if (s.front() != '{') {
      r.error = "expected a JSON object starting with '{', got " + quote_str(s, 24);
      return r;
    }
    if (nesting_depth(s) > 4) {
      r.error = "JSON nested too deeply for an action (more than 4 levels)";
      return r;
    }
    // Duplicate keys: nlohmann keeps the last silently; an action with two "index" keys is ambiguous.
    std::vector<std::set<std::string>> keys;
    std::string dup;
    auto cb = [&](int /*depth*/, ojson::parse_event_t ev, ojson& parsed) {
      switch (ev) {
        case ojson::parse_event_t::object_start:
          keys.emplace_back();
          break;
        case ojson::parse_event_t::object_end:
          if (!keys.empty()) keys.pop_back();
          break;
        case ojson::parse_event_t::key:
          if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second && dup.empty())
            dup = parsed.get<std::string>();
          break;
        default:
          break;
      }
      return true;
    };
    std::string repaired(s);
    if (replace_lone_surrogates(repaired)) s = repaired;
    ojson j;
    try {
      j = ojson::parse(s.begin(), s.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    } catch (const ojson::parse_error& e) {
      std::string what = e.what();
      const size_t p = what.find("] ");
      r.error = "not valid JSON: " + (p == std::string::npos ? what : what.substr(p + 2));
      return r;
    }
    if (!dup.empty()) {
      r.error = "duplicate key " + quote_str(dup);
      return r;
    }
    r.action = check(j, opt);
  } catch (std::string& msg) {
    r.action.reset();
    r.error = std::move(msg);
  } catch (const std::exception& e) {
    r.action.reset();
    r.error = std::string("cannot parse the action: ") + e.what();
  } catch (...) {
    r.action.reset();
    r.error = "cannot parse the action";
  }
  return r;
}

// Bounds: what a real screen bounds, so that the longest answer fits a step's token budget and the
// grammar stays small (constrained decoding compiles this schema; a model with random weights, or a
// confused one, inside a string or an integer emits legal tokens until the bound).
//   index <= 999: a screen's accessibility tree indexes tens of controls, a long list a few hundred;
//     three digits at most.
//   text, message <= 48 characters: what an agent types into one field (a search, an address, a
//     time) or reports when it stops fits one line of a phone screen; longer text costs decode
//     passes on every step that types.
//   app: 1..32 characters, the first not whitespace (parse_action rejects a blank name; a pattern,
//     since "minLength" would admit "  "): launcher labels are short.
//   seconds: an integer 1..60 (parse_action takes any number in (0, 60]): whole seconds are what
//     a screen load needs, and an integer ends after two digits where a number's fraction runs on.
//   swipe points: integers 0..9999 (phone screens are under 4000 pixels; parse_action's own limit
//     is 100000).
// Every answer this schema admits passes parse_action (test ActionSchemaGrammar.*). The variants keep the
// prompt's key order with "action" first: llama.cpp's converter (and grammar/json_schema) puts
// required properties before optional ones, which would move "input"'s optional "index" after its
// required "text"; "input" is therefore two variants (with and without "index", as "swipe" is), and
// the reordering then changes nothing: every other optional property already follows the required
// ones ("scroll" index, "wait" seconds, "finish" message).
const ojson& action_schema() {
  static const ojson schema = [] {
    auto index = ojson{{"type", "integer"},
                       {"minimum", 0},
                       {"maximum", kMaxSchemaIndex},
                       {"description", "the control's number on the screen"}};
    auto text = [](int max_length) { return ojson{{"type", "string"}, {"maxLength", max_length}}; };
    auto dir = ojson{{"enum", {"up", "down", "left", "right"}}};
    auto point = ojson{{"type", "array"},
                       {"items", {{"type", "integer"}, {"minimum", 0}, {"maximum", kMaxSchemaPixel}}},
                       {"minItems", 2},
                       {"maxItems", 2}};
    auto variant = [](const char* name, ojson props, std::vector<std::string> required) {
      ojson p = ojson::object();
      p["action"] = ojson{{"const", name}};
      for (auto& [k, v] : props.items()) p[k] = v;
      required.insert(required.begin(), "action");
      return ojson{{"type", "object"}, {"properties", p}, {"required", required}, {"additionalProperties", false}};
    };
    ojson one_of = ojson::array();
    one_of.push_back(variant("tap", {{"index", index}}, {"index"}));
    one_of.push_back(variant("long_press", {{"index", index}}, {"index"}));
    one_of.push_back(variant("input", {{"index", index}, {"text", text(kMaxSchemaText)}}, {"index", "text"}));
    one_of.push_back(variant("input", {{"text", text(kMaxSchemaText)}}, {"text"}));
    one_of.push_back(variant("scroll", {{"direction", dir}, {"index", index}}, {"direction"}));
    one_of.push_back(variant("swipe", {{"direction", dir}}, {"direction"}));
    one_of.push_back(variant("swipe", {{"from", point}, {"to", point}}, {"from", "to"}));
    one_of.push_back(variant("back", ojson::object(), {}));
    one_of.push_back(variant("home", ojson::object(), {}));
    // ECMA-262 regex: one character that is not a space, tab or line break, then up to 31 that are
    // not line breaks ("." excludes them): a name parse_action's trim cannot empty.
    const std::string app_pattern = "^[^ \\t\\n\\r].{0," + std::to_string(kMaxSchemaApp - 1) + "}$";
    one_of.push_back(variant("open_app", {{"app", {{"type", "string"}, {"pattern", app_pattern}}}}, {"app"}));
    one_of.push_back(variant("wait", {{"seconds", {{"type", "integer"}, {"minimum", 1}, {"maximum", 60}}}}, {}));
    one_of.push_back(variant("finish",
                             {{"status", {{"enum", {"success", "failure", "infeasible"}}}},
                              {"message", text(kMaxSchemaText)}},
                             {"status"}));
    ojson s;
    s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
    s["title"] = "Tandem agent action";
    s["oneOf"] = one_of;
    return s;
  }();
  return schema;
}

}  // namespace tandem::agent
