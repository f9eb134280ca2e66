#include "serve/request/json_fields.h"

#include <cmath>
#include <sstream>

#include "serve/request/request_error.h"

namespace tandem::serve {

namespace {
const Json* field(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string type_name(const Json& v) { return v.type_name(); }

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
}  // namespace

namespace {

// Where the parser is, for naming the field of a value it refuses ("messages[0].content").
class PathTracker {
 public:
  bool on(int, nlohmann::detail::parse_event_t e, Json& parsed) {
    using E = nlohmann::detail::parse_event_t;
    switch (e) {
      case E::object_start: frames_.push_back({false, {}, 0}); break;
      case E::array_start: frames_.push_back({true, {}, 0}); break;
      case E::key:
        if (!frames_.empty() && parsed.is_string()) frames_.back().key = parsed.get<std::string>();
        break;
      case E::object_end:
      case E::array_end:
        if (!frames_.empty()) frames_.pop_back();
        [[fallthrough]];
      case E::value:
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
    }
    return true;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.array) p += "[" + std::to_string(f.index) + "]";
      else p += (p.empty() ? "" : ".") + f.key;
    }
    return p;
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    size_t index;
  };
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json_object(const std::string& body) {
  Json j;
  PathTracker where;
  try {
    j = Json::parse(body, [&where](int depth, nlohmann::detail::parse_event_t e, Json& parsed) {
      return where.on(depth, e, parsed);
    });
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> the useful part
    if (const size_t at = what.find("parse error"); at != std::string::npos) what = what.substr(at);
    throw RequestError("the request body is not valid JSON (" + what + ")");
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double (1e400; nlohmann's out_of_range.406): never a 500, and the
    // field it was in is named.
    std::string what = e.what();
    if (const size_t at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    const std::string field = where.path();
    throw RequestError((field.empty() ? std::string("the request body") : "'" + field + "'") + ": " + what +
                          " (numbers must fit a double: at most about 1.8e308 in magnitude)",
                      field.substr(0, field.find_first_of(".[")));
  }
  if (!j.is_object()) throw RequestError("the request body must be a JSON object, got " + type_name(j));
  // Copying or printing JSON recurses: refuse absurd nesting before anything walks the value
  // (this walk keeps its own stack).
  std::vector<std::pair<const Json*, int>> todo{{&j, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (depth > kMaxJsonDepth)
      throw RequestError("the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (v->is_structured())
      for (const Json& e : *v) todo.emplace_back(&e, depth + 1);
  }
  return j;
}

std::optional<bool> opt_bool(const Json& obj, const char* key) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw RequestError(std::string("'") + key + "' must be a boolean, got " + type_name(*v), key);
  return v->get<bool>();
}

std::optional<int64_t> opt_int(const Json& obj, const char* key, int64_t lo, int64_t hi) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  const auto out_of_range = [&](const std::string& got) {
    return RequestError(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + got,
                       key);
  };
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) throw out_of_range(std::to_string(u));  // never saturated
    x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>()) {
    // 16.0 is accepted as 16; an integral value past 2^53 (where doubles skip integers, and where
    // an integer literal past 2^64 lands) is out of every range here.
    const double d = v->get<double>();
    if (std::fabs(d) >= 9e15) throw out_of_range(v->dump(-1, ' ', false, Json::error_handler_t::replace));
    x = static_cast<int64_t>(d);
  } else {
    throw RequestError(std::string("'") + key + "' must be an integer, got " +
                          (v->is_number() ? "the number " + v->dump(-1, ' ', false, Json::error_handler_t::replace) : type_name(*v)),
                      key);
  }
  if (x < lo || x > hi) throw out_of_range(std::to_string(x));
  return x;
}

std::optional<double> opt_number(const Json& obj, const char* key, double lo, double hi) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw RequestError(std::string("'") + key + "' must be a number, got " + type_name(*v), key);
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw RequestError(std::string("'") + key + "' must be in [" + num(lo) + ", " + num(hi) + "], got " + num(x), key);
  return x;
}

std::optional<std::string> opt_string(const Json& obj, const char* key) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw RequestError(std::string("'") + key + "' must be a string, got " + type_name(*v), key);
  return v->get<std::string>();
}

std::vector<std::string> opt_string_list(const Json& obj, const char* key, size_t max_items) {
  const Json* v = field(obj, key);
  std::vector<std::string> out;
  if (!v) return out;
  const auto bad = [&](const std::string& what) { return RequestError(std::string("'") + key + "' " + what, key); };
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const Json& e : *v) {
      if (!e.is_string()) throw bad("must be a string or an array of strings, found " + type_name(e) + " in the array");
      out.push_back(e.get<std::string>());
    }
  } else {
    throw bad("must be a string or an array of strings, got " + type_name(*v));
  }
  if (out.size() > max_items) throw bad("has " + std::to_string(out.size()) + " entries, at most " + std::to_string(max_items) + " are allowed");
  for (const auto& s : out)
    if (s.empty()) throw bad("must not contain empty strings");
  return out;
}

}  // namespace tandem::serve
