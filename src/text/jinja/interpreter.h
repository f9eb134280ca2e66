// Renders a parsed template: jinja2's scoping (a for loop's body is a new scope each iteration; a
// macro sees the template's globals and top level, its parameters, nothing of its caller), its
// Undefined (printing, testing and iterating one is allowed, using its attributes or doing
// arithmetic with it raises), loop.*, break/continue, macros. Limits bound what a hostile
// template can cost: output bytes, evaluation steps, call depth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/jinja/ast.h"

namespace tandem::text::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;
  uint64_t max_steps = 50'000'000;
  int max_call_depth = 100;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}
  // `context` is a dict: the variables the template sees besides the globals.
  std::string render(const Body& body, const Value& context);

  Value eval(const Expr& e);
  Value call(const Value& fn, CallArgs& args);
  // Counts one evaluation step against the limit.
  void step(int line);
  const RenderLimits& limits() const { return limits_; }
  [[noreturn]] void fail(const std::string& what, int line) const;

 private:
  using Frame = std::unordered_map<std::string, Value>;
  enum class Flow { Normal, Break, Continue };

  Flow exec(const Body& body);
  Flow exec(const Stmt& s);
  void exec_for(const Stmt& s);
  void assign(const std::vector<std::string>& targets, const Value& v, int line);
  void emit(const std::string& s, int line);
  Value lookup(const std::string& name) const;
  Value attribute(const Value& obj, const std::string& name, int line);
  Value item(const Value& obj, const Value& key, int line);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& stride, int line);
  Value binary(const std::string& op, const Value& a, const Value& b, int line);
  bool compare(const std::string& op, const Value& a, const Value& b, int line);
  Value make_macro(const Stmt& s);

  const RenderLimits& limits_;
  std::vector<std::shared_ptr<Frame>> frames_;
  std::string out_;
  uint64_t steps_ = 0;
  int depth_ = 0;
};

// Whether `needle` is in `hay` as Python's `in` says (substring, element, key). Throws for types
// `in` does not apply to.
bool contains(Interpreter& in, const Value& hay, const Value& needle, int line);

}  // namespace tandem::text::jinja
