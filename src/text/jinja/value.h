// The values a Jinja template computes with, with Python's semantics where a chat template can see
// them: str() and repr() of each type, truthiness, ==, ordering, and HF transformers' tojson.
//
// Lists and dicts are shared (Python's references); a dict keeps insertion order (Python 3.7+,
// and the order in which the request's JSON named its keys). A tuple is a list marked as one
// (repr, and [1] != (1,)); a namespace is a dict marked as one (the only value `set x.y =` may
// change). Undefined remembers its name for the error a use of it raises.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::text::jinja {

// A template that cannot be loaded (ParseError) or that failed while rendering (RenderError;
// RaisedError when the template itself called raise_exception). line 0 = unknown.
class Error : public std::runtime_error {
 public:
  Error(const std::string& what, int line) : std::runtime_error(what), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};
class ParseError : public Error {
 public:
  using Error::Error;
};
class RenderError : public Error {
 public:
  using Error::Error;
};
class RaisedError : public RenderError {
 public:
  using RenderError::RenderError;
};

struct Value;
using ValueList = std::vector<Value>;
struct ValueDict;
struct CallArgs;
using NativeFunction = std::function<Value(CallArgs&)>;

struct Value {
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
  Kind kind = Kind::Undefined;
  bool is_tuple = false;      // List: a tuple
  bool is_namespace = false;  // Dict: namespace()
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String; Undefined: the name that was looked up (for its error)
  std::shared_ptr<ValueList> list;
  std::shared_ptr<ValueDict> dict;
  std::shared_ptr<NativeFunction> fn;

  static Value undefined(std::string name = {}) { Value v; v.s = std::move(name); return v; }
  static Value none() { Value v; v.kind = Kind::None; return v; }
  static Value boolean(bool x) { Value v; v.kind = Kind::Bool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = Kind::Int; v.i = x; return v; }
  static Value number(double x) { Value v; v.kind = Kind::Float; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = Kind::String; v.s = std::move(x); return v; }
  static Value new_list(ValueList items = {}, bool tuple = false);
  static Value new_dict();
  static Value function(NativeFunction f);
  static Value from_json(const nlohmann::ordered_json& j);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double as_double() const { return kind == Kind::Float ? f : kind == Kind::Bool ? (b ? 1 : 0) : static_cast<double>(i); }
  int64_t as_int() const { return kind == Kind::Bool ? (b ? 1 : 0) : i; }

  bool truthy() const;
  std::string str() const;   // Python str()
  std::string repr() const;  // Python repr()
  const char* type_name() const;  // Python's name of the type, for errors
};

struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  int line = 0;
  // Python's binding of positional and keyword arguments to named parameters: the i-th
  // parameter's value, or `fallback` when it was not passed.
  Value get(size_t index, const char* name, Value fallback = Value()) const;
};

bool equals(const Value& a, const Value& b);
// Python's <: numbers, strings (code point order = UTF-8 byte order), lists; false for others and
// sets *ok to false.
bool less(const Value& a, const Value& b, bool* ok);
// Python's repr of a float (shortest round trip; exponent form below 1e-4 and from 1e16).
std::string float_repr(double d);
// json.dumps(v, ensure_ascii=False, indent=indent) as HF transformers' tojson filter calls it:
// separators ", " / ": " without indent, "," / ": " with one; keys in insertion order. Throws
// RenderError for a value JSON cannot hold (undefined, a function).
std::string to_json(const Value& v, int indent = -1, int line = 0);

// Code points of UTF-8 text (invalid bytes each one code point) and back: Python indexes, slices
// and measures strings by code point.
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace tandem::text::jinja
