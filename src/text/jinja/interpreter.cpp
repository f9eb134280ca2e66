#include "text/jinja/interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "text/jinja/builtins.h"

namespace tandem::text::jinja {
namespace {

// Python's index into a sequence of n: negative from the end; -1 when out of range.
int64_t py_index(int64_t i, size_t n) {
  if (i < 0) i += static_cast<int64_t>(n);
  return i < 0 || i >= static_cast<int64_t>(n) ? -1 : i;
}

std::string undefined_message(const Value& v) { return v.s.empty() ? "a value is undefined" : v.s; }

void check_defined(const Interpreter& in, const Value& v, int line) {
  if (v.is_undefined()) in.fail(undefined_message(v), line);
}

// Python's slice indices (start, stop, step) for a sequence of n.
std::vector<size_t> slice_indices(Interpreter& in, const Value& start, const Value& stop, const Value& stride, size_t n,
                                  int line) {
  const auto as_opt = [&](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)
      in.fail(std::string("slice ") + what + " must be an integer or None", line);
    return v.as_int();
  };
  const int64_t len = static_cast<int64_t>(n);
  const int64_t st = as_opt(stride, "step").value_or(1);
  if (st == 0) in.fail("slice step cannot be zero", line);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) x += len;
    if (st > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t b = clamp(as_opt(start, "start"), st > 0 ? 0 : len - 1);
  const int64_t e = clamp(as_opt(stop, "stop"), st > 0 ? len : -1);
  std::vector<size_t> idx;
  if (st > 0) {
    for (int64_t k = b; k < e; k += st) idx.push_back(static_cast<size_t>(k));
  } else {
    for (int64_t k = b; k > e; k += st) idx.push_back(static_cast<size_t>(k));
  }
  return idx;
}

}  // namespace

void Interpreter::fail(const std::string& what, int line) const {
  throw RenderError(line > 0 ? what + " (line " + std::to_string(line) + ")" : what, line);
}

void Interpreter::step(int line) {
  if (++steps_ > limits_.max_steps)
    fail("the template took more than " + std::to_string(limits_.max_steps) + " steps to render", line);
}

std::string Interpreter::render(const Body& body, const Value& context) {
  frames_.clear();
  out_.clear();
  steps_ = 0;
  depth_ = 0;
  auto globals = std::make_shared<Frame>();
  ValueDict g;
  add_globals(g);
  for (auto& [k, v] : g.items) (*globals)[k] = v;
  if (context.is_dict())
    for (const auto& [k, v] : context.dict->items) (*globals)[k] = v;
  frames_.push_back(globals);
  frames_.push_back(std::make_shared<Frame>());
  exec(body);
  frames_.clear();
  return std::move(out_);
}

void Interpreter::emit(const std::string& s, int line) {
  if (out_.size() + s.size() > limits_.max_output_bytes)
    fail("the rendered template exceeds " + std::to_string(limits_.max_output_bytes) + " bytes", line);
  out_ += s;
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    const auto f = (*it)->find(name);
    if (f != (*it)->end()) return f->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

Interpreter::Flow Interpreter::exec(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  step(s.line);
  switch (s.kind) {
    case Stmt::Kind::Text: emit(s.text, s.line); break;
    case Stmt::Kind::Output: emit(eval(*s.expr).str(), s.line); break;
    case Stmt::Kind::If:
      for (size_t k = 0; k < s.conds.size(); ++k)
        if (eval(*s.conds[k]).truthy()) return exec(s.bodies[k]);
      return exec(s.else_body);
    case Stmt::Kind::For: exec_for(s); break;
    case Stmt::Kind::Set: {
      Value v = eval(*s.expr);
      if (!s.target_attr.empty()) {
        Value obj = lookup(s.targets[0]);
        if (!obj.is_dict() || !obj.is_namespace)
          fail("cannot assign attribute '" + s.target_attr + "' on a " + obj.type_name() + " (only on a namespace)", s.line);
        obj.dict->set(s.target_attr, std::move(v));
      } else {
        assign(s.targets, v, s.line);
      }
      break;
    }
    case Stmt::Kind::SetBlock: {
      std::string saved;
      std::swap(saved, out_);
      exec(s.body);
      std::swap(saved, out_);
      (*frames_.back())[s.targets[0]] = Value::string(std::move(saved));
      break;
    }
    case Stmt::Kind::Macro: (*frames_.back())[s.name] = make_macro(s); break;
    case Stmt::Kind::Break: return Flow::Break;
    case Stmt::Kind::Continue: return Flow::Continue;
    case Stmt::Kind::Plain: return exec(s.body);
  }
  return Flow::Normal;
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& v, int line) {
  if (targets.size() == 1) {
    (*frames_.back())[targets[0]] = v;
    return;
  }
  ValueList items;
  if (v.is_list()) {
    items = *v.list;
  } else if (v.is_string()) {
    for (auto& c : utf8_chars(v.s)) items.push_back(Value::string(c));
  } else if (v.is_dict()) {
    for (auto& kv : v.dict->items) items.push_back(Value::string(kv.first));
  } else {
    fail(std::string("cannot unpack a non-iterable ") + v.type_name(), line);
  }
  if (items.size() != targets.size())
    fail("expected " + std::to_string(targets.size()) + " values to unpack, got " + std::to_string(items.size()), line);
  for (size_t k = 0; k < targets.size(); ++k) (*frames_.back())[targets[k]] = items[k];
}

void Interpreter::exec_for(const Stmt& s) {
  const Value seq = eval(*s.expr);
  ValueList items;
  switch (seq.kind) {
    case Value::Kind::Undefined: break;  // iterating an Undefined is empty
    case Value::Kind::List: items = *seq.list; break;
    case Value::Kind::Dict:
      if (seq.is_namespace) fail("'Namespace' object is not iterable", s.line);
      for (const auto& kv : seq.dict->items) items.push_back(Value::string(kv.first));
      break;
    case Value::Kind::String:
      for (auto& c : utf8_chars(seq.s)) items.push_back(Value::string(c));
      break;
    default: fail(std::string("'") + seq.type_name() + "' object is not iterable", s.line);
  }
  if (s.cond) {  // {% for x in xs if cond %}: the filter sees x, not loop
    ValueList kept;
    for (const Value& v : items) {
      frames_.push_back(std::make_shared<Frame>());
      assign(s.targets, v, s.line);
      const bool keep = eval(*s.cond).truthy();
      frames_.pop_back();
      if (keep) kept.push_back(v);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body);
    return;
  }
  const size_t n = items.size();
  auto index = std::make_shared<size_t>(0);
  const Value cycle = Value::function([index, this](CallArgs& a) {
    if (a.pos.empty()) fail("loop.cycle() needs at least one value", a.line);
    return a.pos[*index % a.pos.size()];
  });
  for (size_t k = 0; k < n; ++k) {
    *index = k;
    frames_.push_back(std::make_shared<Frame>());
    Value loop = Value::new_dict();
    auto& d = *loop.dict;
    d.items.reserve(12);
    d.items.emplace_back("index", Value::integer(static_cast<int64_t>(k + 1)));
    d.items.emplace_back("index0", Value::integer(static_cast<int64_t>(k)));
    d.items.emplace_back("revindex", Value::integer(static_cast<int64_t>(n - k)));
    d.items.emplace_back("revindex0", Value::integer(static_cast<int64_t>(n - k - 1)));
    d.items.emplace_back("first", Value::boolean(k == 0));
    d.items.emplace_back("last", Value::boolean(k + 1 == n));
    d.items.emplace_back("length", Value::integer(static_cast<int64_t>(n)));
    d.items.emplace_back("depth", Value::integer(1));
    d.items.emplace_back("depth0", Value::integer(0));
    if (k > 0) d.items.emplace_back("previtem", items[k - 1]);
    if (k + 1 < n) d.items.emplace_back("nextitem", items[k + 1]);
    d.items.emplace_back("cycle", cycle);
    (*frames_.back())["loop"] = loop;
    assign(s.targets, items[k], s.line);
    const Flow f = exec(s.body);
    frames_.pop_back();
    if (f == Flow::Break) break;
  }
}

Value Interpreter::make_macro(const Stmt& s) {
  // The globals and the template's top level live as long as the render; a macro keeps them by
  // address (a reference back to the frame that holds the macro would be a cycle).
  Frame* g = frames_[0].get();
  Frame* top = frames_[1].get();
  const Stmt* m = &s;
  return Value::function([this, g, top, m](CallArgs& a) {
    if (a.pos.size() > m->params.size())
      fail("macro '" + m->name + "' takes " + std::to_string(m->params.size()) + " arguments, " +
               std::to_string(a.pos.size()) + " given",
           a.line);
    for (const auto& kv : a.kw) {
      bool known = false;
      for (const auto& p : m->params) known = known || p.first == kv.first;
      if (!known) fail("macro '" + m->name + "' has no parameter '" + kv.first + "'", a.line);
    }
    if (++depth_ > limits_.max_call_depth) fail("macro calls nested deeper than " + std::to_string(limits_.max_call_depth), a.line);
    auto saved_frames = std::move(frames_);
    frames_.clear();
    // Borrowed frames: owned by saved_frames[0..1] for the whole call.
    frames_.push_back(std::shared_ptr<Frame>(std::shared_ptr<Frame>(), g));
    frames_.push_back(std::shared_ptr<Frame>(std::shared_ptr<Frame>(), top));
    frames_.push_back(std::make_shared<Frame>());
    std::string saved_out;
    std::swap(saved_out, out_);
    struct Restore {
      Interpreter* in;
      std::vector<std::shared_ptr<Frame>>* frames;
      std::string* out;
      ~Restore() {
        in->frames_ = std::move(*frames);
        std::swap(in->out_, *out);
        --in->depth_;
      }
    } restore{this, &saved_frames, &saved_out};
    for (size_t k = 0; k < m->params.size(); ++k) {
      Value v = a.get(k, m->params[k].first.c_str(), Value::undefined("'" + m->params[k].first + "' is undefined"));
      if (v.is_undefined() && m->params[k].second) {
        bool passed = k < a.pos.size();
        for (const auto& kv : a.kw) passed = passed || kv.first == m->params[k].first;
        if (!passed) v = eval(*m->params[k].second);
      }
      (*frames_.back())[m->params[k].first] = v;
    }
    exec(m->body);
    // The caller's output goes back in place (Restore); this call's is the value.
    return Value::string(out_);
  });
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) fail(undefined_message(fn), args.line);
  if (fn.kind != Value::Kind::Function) fail(std::string("'") + fn.type_name() + "' object is not callable", args.line);
  return (*fn.fn)(args);
}

Value Interpreter::attribute(const Value& obj, const std::string& name, int line) {
  check_defined(*this, obj, line);
  if (obj.is_dict()) {
    if (!obj.is_namespace && is_builtin_method(name) &&
        (name == "items" || name == "keys" || name == "values" || name == "get")) {
      // getattr first, as jinja2 does: d.items is the method even when d has a key "items".
      Value self = obj;
      return Value::function([this, self, name](CallArgs& a) {
        bool found = false;
        return call_method(*this, self, name, a, &found);
      });
    }
    if (const Value* v = obj.dict->find(name)) return *v;
    return Value::undefined(std::string("'") + obj.type_name() + " object' has no attribute '" + name + "'");
  }
  if (obj.is_string() && is_builtin_method(name)) {
    Value self = obj;
    return Value::function([this, self, name](CallArgs& a) {
      bool found = false;
      Value r = call_method(*this, self, name, a, &found);
      if (!found) fail("'str object' has no attribute '" + name + "'", a.line);
      return r;
    });
  }
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no attribute '" + name + "'");
}

Value Interpreter::item(const Value& obj, const Value& key, int line) {
  check_defined(*this, obj, line);
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict->find(key.s)) return *v;
      return attribute(obj, key.s, line);
    }
    return Value::undefined("'dict object' has no attribute " + key.repr());
  }
  if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    if (obj.is_list()) {
      const int64_t k = py_index(key.as_int(), obj.list->size());
      if (k >= 0) return (*obj.list)[static_cast<size_t>(k)];
    } else {
      const auto chars = utf8_chars(obj.s);
      const int64_t k = py_index(key.as_int(), chars.size());
      if (k >= 0) return Value::string(chars[static_cast<size_t>(k)]);
    }
    return Value::undefined(std::string("'") + obj.type_name() + " object' has no element " + key.repr());
  }
  if (key.is_string()) return attribute(obj, key.s, line);
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no element " + key.repr());
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& stride, int line) {
  check_defined(*this, obj, line);
  if (obj.is_list()) {
    ValueList out;
    for (size_t k : slice_indices(*this, start, stop, stride, obj.list->size(), line)) out.push_back((*obj.list)[k]);
    return Value::new_list(std::move(out), obj.is_tuple);
  }
  if (obj.is_string()) {
    const auto chars = utf8_chars(obj.s);
    std::string out;
    for (size_t k : slice_indices(*this, start, stop, stride, chars.size(), line)) out += chars[k];
    return Value::string(std::move(out));
  }
  fail(std::string("a ") + obj.type_name() + " cannot be sliced", line);
}

bool contains(Interpreter& in, const Value& hay, const Value& needle, int line) {
  switch (hay.kind) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!needle.is_string()) {
        in.fail(std::string("'in <string>' requires a string as left operand, not ") + needle.type_name(), line);
      }
      return hay.s.find(needle.s) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : *hay.list)
        if (equals(v, needle)) return true;
      return false;
    case Value::Kind::Dict:
      if (hay.is_namespace) break;
      return needle.is_string() && hay.dict->find(needle.s) != nullptr;
    default: break;
  }
  in.fail(std::string("argument of type '") + hay.type_name() + "' is not iterable", line);
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "in") return contains(*this, b, a, line);
  if (op == "notin") return !contains(*this, b, a, line);
  bool ok = true;
  bool r = false;
  if (op == "<") r = less(a, b, &ok);
  else if (op == ">") r = less(b, a, &ok);
  else if (op == "<=") r = !less(b, a, &ok);
  else if (op == ">=") r = !less(a, b, &ok);
  if (!ok)
    fail("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'", line);
  return r;
}

Value Interpreter::binary(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "~") return Value::string(a.str() + b.str());
  const auto type_error = [&]() {
    fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'", line);
  };
  if (a.is_undefined()) fail(undefined_message(a), line);
  if (b.is_undefined()) fail(undefined_message(b), line);
  const bool ints = (a.kind == Value::Kind::Int || a.kind == Value::Kind::Bool) &&
                    (b.kind == Value::Kind::Int || b.kind == Value::Kind::Bool);
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow in +", line);
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      if (a.s.size() + b.s.size() > limits_.max_output_bytes) fail("string too long", line);
      return Value::string(a.s + b.s);
    }
    if (a.is_list() && b.is_list() && a.is_tuple == b.is_tuple) {
      if (a.list->size() + b.list->size() > limits_.max_output_bytes) fail("list too long", line);
      ValueList r = *a.list;
      r.insert(r.end(), b.list->begin(), b.list->end());
      return Value::new_list(std::move(r), a.is_tuple);
    }
    type_error();
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow in -", line);
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() - b.as_double());
    type_error();
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail("integer overflow in *", line);
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    const Value* seq = a.is_string() || a.is_list() ? &a : &b;
    const Value* count = seq == &a ? &b : &a;
    if ((seq->is_string() || seq->is_list()) && (count->kind == Value::Kind::Int || count->kind == Value::Kind::Bool)) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      const size_t unit = seq->is_string() ? seq->s.size() : seq->list->size();
      if (unit > 0 && static_cast<uint64_t>(n) > limits_.max_output_bytes / unit) fail("repetition too long", line);
      if (seq->is_string()) {
        std::string r;
        for (int64_t k = 0; k < n; ++k) r += seq->s;
        return Value::string(std::move(r));
      }
      ValueList r;
      for (int64_t k = 0; k < n; ++k) r.insert(r.end(), seq->list->begin(), seq->list->end());
      return Value::new_list(std::move(r), seq->is_tuple);
    }
    type_error();
  }
  if (!nums) {
    if (op == "%" && a.is_string()) fail("unsupported construct: '%' string formatting", line);
    type_error();
  }
  if (op == "/") {
    if (b.as_double() == 0) fail("division by zero", line);
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0) fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero", line);
    if (ints) {
      const int64_t x = a.as_int(), y = b.as_int();
      if (x == INT64_MIN && y == -1) fail("integer overflow in " + op, line);
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "//") return Value::number(std::floor(x / y));
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::number(r);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t r = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; --e) {
        if (__builtin_mul_overflow(r, base, &r)) fail("integer overflow in **", line);
        if (r == 0 || r == 1) break;
      }
      return Value::integer(r);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  type_error();
  return Value();
}

Value Interpreter::eval(const Expr& e) {
  step(e.line);
  switch (e.kind) {
    case Expr::Kind::Literal: return e.value;
    case Expr::Kind::Name: return lookup(e.name);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      ValueList items;
      for (const auto& x : e.items) items.push_back(eval(*x));
      return Value::new_list(std::move(items), e.kind == Expr::Kind::Tuple);
    }
    case Expr::Kind::Dict: {
      Value d = Value::new_dict();
      for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
        Value key = eval(*e.items[k]);
        if (!key.is_string()) fail("dict keys must be strings here", e.line);
        d.dict->set(key.s, eval(*e.items[k + 1]));
      }
      return d;
    }
    case Expr::Kind::Attr: return attribute(eval(*e.a), e.name, e.line);
    case Expr::Kind::Item: {
      Value obj = eval(*e.a);
      return item(obj, eval(*e.b), e.line);
    }
    case Expr::Kind::Slice: {
      Value obj = eval(*e.a);
      Value parts[3];
      for (int k = 0; k < 3; ++k) parts[k] = e.items[k] ? eval(*e.items[k]) : Value::none();
      return slice(obj, parts[0], parts[1], parts[2], e.line);
    }
    case Expr::Kind::Call: {
      CallArgs args;
      args.line = e.line;
      auto eval_args = [&]() {
        for (const auto& x : e.items) args.pos.push_back(eval(*x));
        for (const auto& [k, x] : e.kwargs) args.kw.emplace_back(k, eval(*x));
      };
      if (e.a->kind == Expr::Kind::Attr) {
        Value obj = eval(*e.a->a);
        check_defined(*this, obj, e.line);
        if (obj.is_dict()) {
          const Value* member = obj.dict->find(e.a->name);
          if (member && member->kind == Value::Kind::Function) {
            Value fn = *member;
            eval_args();
            return call(fn, args);
          }
        }
        eval_args();
        bool found = false;
        Value r = call_method(*this, obj, e.a->name, args, &found);
        if (!found) fail(std::string("'") + obj.type_name() + " object' has no method '" + e.a->name + "'", e.line);
        return r;
      }
      Value fn = eval(*e.a);
      eval_args();
      return call(fn, args);
    }
    case Expr::Kind::Filter: {
      Value v = eval(*e.a);
      CallArgs args;
      args.line = e.line;
      for (const auto& x : e.items) args.pos.push_back(eval(*x));
      for (const auto& [k, x] : e.kwargs) args.kw.emplace_back(k, eval(*x));
      return apply_filter(*this, e.name, v, args);
    }
    case Expr::Kind::Test: {
      Value v = eval(*e.a);
      CallArgs args;
      args.line = e.line;
      for (const auto& x : e.items) args.pos.push_back(eval(*x));
      for (const auto& [k, x] : e.kwargs) args.kw.emplace_back(k, eval(*x));
      return Value::boolean(apply_test(*this, e.name, v, args) != e.negate);
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.a);
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool) {
        if (e.name == "+") return Value::integer(v.as_int());
        if (v.as_int() == INT64_MIN) fail("integer overflow in unary -", e.line);
        return Value::integer(-v.as_int());
      }
      if (v.kind == Value::Kind::Float) return Value::number(e.name == "-" ? -v.f : v.f);
      check_defined(*this, v, e.line);
      fail(std::string("bad operand type for unary ") + e.name + ": '" + v.type_name() + "'", e.line);
    }
    case Expr::Kind::Binary: {
      if (e.name == "and") {
        Value l = eval(*e.a);
        return l.truthy() ? eval(*e.b) : l;
      }
      if (e.name == "or") {
        Value l = eval(*e.a);
        return l.truthy() ? l : eval(*e.b);
      }
      Value l = eval(*e.a);
      Value r = eval(*e.b);
      return binary(e.name, l, r, e.line);
    }
    case Expr::Kind::Compare: {
      Value l = eval(*e.a);
      for (size_t k = 0; k < e.ops.size(); ++k) {
        Value r = eval(*e.items[k]);
        if (!compare(e.ops[k], l, r, e.line)) return Value::boolean(false);
        l = std::move(r);
      }
      return Value::boolean(true);
    }
    case Expr::Kind::Cond:
      if (eval(*e.b).truthy()) return eval(*e.a);
      return e.c ? eval(*e.c) : Value::undefined("the 'if' expression had no 'else'");
  }
  return Value();
}

}  // namespace tandem::text::jinja
