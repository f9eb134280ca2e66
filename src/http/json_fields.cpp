#include "http/json_fields.h"

#include <cmath>
#include <sstream>

#include "http/api_error.h"

namespace tandem::http {

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

Json parse_json_object(const std::string& body) {
  Json j;
  try {
    j = Json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> the useful part
    if (const size_t at = what.find("parse error"); at != std::string::npos) what = what.substr(at);
    throw bad_request("the request body is not valid JSON (" + what + ")");
  }
  if (!j.is_object()) throw bad_request("the request body must be a JSON object, got " + type_name(j));
  // Copying or printing JSON recurses: refuse absurd nesting before anything walks the value
  // (this walk keeps its own stack).
  std::vector<std::pair<const Json*, int>> todo{{&j, 1}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (depth > kMaxJsonDepth)
      throw bad_request("the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (v->is_structured())
      for (const Json& e : *v) todo.emplace_back(&e, depth + 1);
  }
  return j;
}

std::optional<bool> opt_bool(const Json& obj, const char* key) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean, got " + type_name(*v), key);
  return v->get<bool>();
}

std::optional<int64_t> opt_int(const Json& obj, const char* key, int64_t lo, int64_t hi) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) x = INT64_MAX;
    else x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e15) {
    x = static_cast<int64_t>(v->get<double>());  // 16.0 is accepted as 16
  } else {
    throw bad_request(std::string("'") + key + "' must be an integer, got " +
                          (v->is_number() ? "the number " + to_text(*v) : type_name(*v)),
                      key);
  }
  if (x < lo || x > hi)
    throw bad_request(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], got " + std::to_string(x),
                      key);
  return x;
}

std::optional<double> opt_number(const Json& obj, const char* key, double lo, double hi) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw bad_request(std::string("'") + key + "' must be a number, got " + type_name(*v), key);
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    throw bad_request(std::string("'") + key + "' must be in [" + num(lo) + ", " + num(hi) + "], got " + num(x), key);
  return x;
}

std::optional<std::string> opt_string(const Json& obj, const char* key) {
  const Json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw bad_request(std::string("'") + key + "' must be a string, got " + type_name(*v), key);
  return v->get<std::string>();
}

std::vector<std::string> opt_string_list(const Json& obj, const char* key, size_t max_items) {
  const Json* v = field(obj, key);
  std::vector<std::string> out;
  if (!v) return out;
  const auto bad = [&](const std::string& what) { return bad_request(std::string("'") + key + "' " + what, key); };
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

}  // namespace tandem::http
