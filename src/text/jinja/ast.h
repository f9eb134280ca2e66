// The parsed template: statements (text, output, if, for, set, macro, ...) over expressions.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace tandem::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key, value, key, value...
    Attr,      // a.name
    Item,      // a[b]
    Slice,     // a[b:c:d]; a missing bound is null
    Call,      // a(items, kwargs)
    Filter,    // a | name(items, kwargs); a null for a filter block's body (unused)
    Test,      // a is [not] name(items)  (negate)
    Unary,     // op a: "-", "+", "not"
    Binary,    // a op b: + - * / // % ** ~ and or
    Compare,   // a op0 items[0] op1 items[1] ...: ops in `ops`
    Cond,      // a if b else c
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;  // Name, Attr, Call-less names, Filter, Test; Unary/Binary op
  bool negate = false;
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // conds[i] -> bodies[i]; else_body
    For,       // for targets in expr [if cond]: body; else_body
    Set,       // targets (or attr target: target_obj.target_attr) = expr
    SetBlock,  // {% set name %}body{% endset %}
    Macro,     // name(params) body
    Break,
    Continue,
    Plain,     // a block that only renders its body ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr, cond;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body body, else_body;
  std::vector<std::string> targets;
  std::string target_attr;  // Set: `set ns.attr = ...` (targets[0] = ns)
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: name, default (null: none)
};

}  // namespace tandem::text::jinja
