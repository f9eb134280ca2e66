#include "text/jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "text/jinja/builtins.h"

namespace tandem::text::jinja {
namespace {

// Deep enough for any real template, shallow enough that a fuzzed one cannot overflow the stack.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body run() {
    std::string end;
    Body body = parse_body({}, &end);
    for (const auto& [name, line] : called_)
      if (!macros_.count(name) && !is_builtin_global(name))
        throw ParseError("unsupported function '" + name + "' (not a macro of the template nor a known global) at line " +
                             std::to_string(line),
                         line);
    return body;
  }

 private:
  // ------------------------------------------------------------------ token stream
  const Token& cur() const { return t_[p_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(p_ + n, t_.size() - 1)]; }
  void advance() {
    if (p_ + 1 < t_.size()) ++p_;
  }
  bool is_op(const char* op) const { return cur().kind == Token::Kind::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Token::Kind::Name && cur().text == n; }
  [[noreturn]] void fail(const std::string& what) const {
    throw ParseError(what + " at line " + std::to_string(cur().line), cur().line);
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Token::Kind::Text: return "text";
      case Token::Kind::VarBegin: return "'{{'";
      case Token::Kind::VarEnd: return "'}}'";
      case Token::Kind::BlockBegin: return "'{%'";
      case Token::Kind::BlockEnd: return "'%}'";
      case Token::Kind::End: return "the end of the template";
      case Token::Kind::String: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe(cur()));
    advance();
  }
  std::string expect_name(const char* what) {
    if (cur().kind != Token::Kind::Name) fail(std::string("expected ") + what + ", found " + describe(cur()));
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().kind != Token::Kind::BlockEnd) fail("expected '%}', found " + describe(cur()));
    advance();
  }
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxNesting) p.fail("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  // ------------------------------------------------------------------ statements
  // Statements up to one of `ends` (a block tag name, consumed with its '{%' and stored in *end).
  Body parse_body(const std::set<std::string>& ends, std::string* end) {
    DepthGuard g(*this);
    Body body;
    while (true) {
      const Token& tk = cur();
      if (tk.kind == Token::Kind::End) {
        if (!ends.empty()) {
          std::string want;
          for (const auto& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
          fail("unexpected end of template (expected " + want + ")");
        }
        *end = "";
        return body;
      }
      if (tk.kind == Token::Kind::Text) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Text;
        s->line = tk.line;
        s->text = tk.text;
        body.push_back(std::move(s));
        advance();
      } else if (tk.kind == Token::Kind::VarBegin) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::Output;
        s->line = tk.line;
        advance();
        s->expr = parse_tuple_expr();
        if (cur().kind != Token::Kind::VarEnd) fail("expected '}}', found " + describe(cur()));
        advance();
        body.push_back(std::move(s));
      } else if (tk.kind == Token::Kind::BlockBegin) {
        advance();
        if (cur().kind != Token::Kind::Name) fail("expected a tag name after '{%', found " + describe(cur()));
        const std::string tag = cur().text;
        if (ends.count(tag)) {
          advance();
          *end = tag;
          return body;
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(tk));
      }
    }
  }

  StmtPtr parse_statement() {
    const std::string tag = cur().text;
    const int line = cur().line;
    auto s = std::make_unique<Stmt>();
    s->line = line;
    advance();
    std::string end;
    if (tag == "if") {
      s->kind = Stmt::Kind::If;
      s->conds.push_back(parse_tuple_expr());
      expect_block_end();
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      while (end == "elif") {
        s->conds.push_back(parse_tuple_expr());
        expect_block_end();
        s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      }
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endif"}, &end);
      }
      expect_block_end();
    } else if (tag == "for") {
      s->kind = Stmt::Kind::For;
      s->targets = parse_targets();
      if (!is_name("in")) fail("expected 'in' in a for loop, found " + describe(cur()));
      advance();
      s->expr = parse_tuple_expr(/*condexpr=*/false);
      if (is_name("if")) {
        advance();
        s->cond = parse_expression();
      }
      if (is_name("recursive")) fail("unsupported construct 'recursive' loop");
      expect_block_end();
      ++loops_;
      s->body = parse_body({"else", "endfor"}, &end);
      --loops_;
      if (end == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"}, &end);
      }
      expect_block_end();
    } else if (tag == "set") {
      const std::string first = expect_name("a variable name after 'set'");
      if (is_op(".")) {
        advance();
        s->kind = Stmt::Kind::Set;
        s->targets = {first};
        s->target_attr = expect_name("an attribute name");
        expect_op("=");
        s->expr = parse_tuple_expr();
        expect_block_end();
        return s;
      }
      s->targets = {first};
      while (is_op(",")) {
        advance();
        s->targets.push_back(expect_name("a variable name"));
      }
      if (is_op("=")) {
        advance();
        s->kind = Stmt::Kind::Set;
        s->expr = parse_tuple_expr();
        expect_block_end();
      } else {
        if (s->targets.size() != 1) fail("expected '=' after several 'set' targets");
        if (is_op("|")) fail("unsupported construct 'set' block with a filter");
        s->kind = Stmt::Kind::SetBlock;
        expect_block_end();
        s->body = parse_body({"endset"}, &end);
        expect_block_end();
      }
    } else if (tag == "macro") {
      s->kind = Stmt::Kind::Macro;
      s->name = expect_name("a macro name");
      macros_.insert(s->name);
      expect_op("(");
      while (!is_op(")")) {
        std::string p = expect_name("a parameter name");
        ExprPtr def;
        if (is_op("=")) {
          advance();
          def = parse_expression();
        }
        s->params.emplace_back(std::move(p), std::move(def));
        if (!is_op(",")) break;
        advance();
      }
      expect_op(")");
      expect_block_end();
      const int saved = loops_;
      loops_ = 0;
      s->body = parse_body({"endmacro"}, &end);
      loops_ = saved;
      if (cur().kind == Token::Kind::Name) advance();  // {% endmacro name %}
      expect_block_end();
    } else if (tag == "break" || tag == "continue") {
      if (loops_ == 0) fail("'" + tag + "' outside a for loop");
      s->kind = tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
      expect_block_end();
    } else if (tag == "generation") {
      // HF transformers' extension marking the assistant's tokens; it renders its body.
      s->kind = Stmt::Kind::Plain;
      expect_block_end();
      s->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
    } else if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
      throw ParseError("unexpected '" + tag + "' at line " + std::to_string(line), line);
    } else {
      throw ParseError("unsupported construct '{% " + tag + " %}' at line " + std::to_string(line), line);
    }
    return s;
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = is_op("(");
    if (paren) advance();
    names.push_back(expect_name("a loop variable"));
    while (is_op(",")) {
      advance();
      if (cur().kind != Token::Kind::Name) break;
      names.push_back(expect_name("a loop variable"));
    }
    if (paren) expect_op(")");
    return names;
  }

  // ------------------------------------------------------------------ expressions
  ExprPtr node(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }

  // An expression, or several separated by commas (a tuple without parentheses).
  ExprPtr parse_tuple_expr(bool condexpr = true) {
    const int line = cur().line;
    ExprPtr first = parse_expression(condexpr);
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::Tuple, line);
    t->items.push_back(std::move(first));
    while (is_op(",")) {
      advance();
      if (cur().kind == Token::Kind::BlockEnd || cur().kind == Token::Kind::VarEnd || is_name("if") || is_op("="))
        break;
      t->items.push_back(parse_expression(condexpr));
    }
    return t;
  }

  ExprPtr parse_expression(bool condexpr = true) {
    DepthGuard g(*this);
    ExprPtr e = parse_or();
    if (!condexpr) return e;
    while (is_name("if")) {
      const int line = cur().line;
      advance();
      auto c = node(Expr::Kind::Cond, line);
      c->b = parse_or();
      if (is_name("else")) {
        advance();
        c->c = parse_expression();
      }
      c->a = std::move(e);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = node(Expr::Kind::Binary, line);
    b->name = op;
    b->a = std::move(l);
    b->b = std::move(r);
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      advance();
      l = binary("or", std::move(l), parse_and(), line);
    }
    return l;
  }
  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      advance();
      l = binary("and", std::move(l), parse_not(), line);
    }
    return l;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard g(*this);
      auto u = node(Expr::Kind::Unary, cur().line);
      advance();
      u->name = "not";
      u->a = parse_not();
      return u;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().kind == Token::Kind::Op &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" || cur().text == "<=" ||
           cur().text == ">=")) {
        op = cur().text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().kind == Token::Kind::Name && peek().text == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, line);
        cmp->a = std::move(first);
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }
  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().text;
      const int line = cur().line;
      advance();
      l = binary(op, std::move(l), parse_concat(), line);
    }
    return l;
  }
  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      const int line = cur().line;
      advance();
      l = binary("~", std::move(l), parse_math2(), line);
    }
    return l;
  }
  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().text;
      const int line = cur().line;
      advance();
      l = binary(op, std::move(l), parse_pow(), line);
    }
    return l;
  }
  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      advance();
      l = binary("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard g(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::Unary, cur().line);
      e->name = cur().text;
      advance();
      e->a = parse_unary(false);
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& tk = cur();
    const int line = tk.line;
    switch (tk.kind) {
      case Token::Kind::Name: {
        const std::string& n = tk.text;
        auto lit = node(Expr::Kind::Literal, line);
        if (n == "true" || n == "True") lit->value = Value::boolean(true);
        else if (n == "false" || n == "False") lit->value = Value::boolean(false);
        else if (n == "none" || n == "None") lit->value = Value::none();
        else {
          auto nm = node(Expr::Kind::Name, line);
          nm->name = n;
          advance();
          return nm;
        }
        advance();
        return lit;
      }
      case Token::Kind::String: {
        std::string s;
        while (cur().kind == Token::Kind::String) {  // adjacent literals join, as in Python
          s += cur().text;
          advance();
        }
        auto lit = node(Expr::Kind::Literal, line);
        lit->value = Value::string(std::move(s));
        return lit;
      }
      case Token::Kind::Int: {
        auto lit = node(Expr::Kind::Literal, line);
        try {
          lit->value = Value::integer(std::stoll(tk.text));
        } catch (const std::exception&) {
          fail("integer literal out of range");
        }
        advance();
        return lit;
      }
      case Token::Kind::Float: {
        auto lit = node(Expr::Kind::Literal, line);
        lit->value = Value::number(std::strtod(tk.text.c_str(), nullptr));
        advance();
        return lit;
      }
      case Token::Kind::Op:
        if (tk.text == "(") {
          advance();
          if (is_op(")")) {
            advance();
            return node(Expr::Kind::Tuple, line);
          }
          ExprPtr e = parse_expression();
          if (is_op(",")) {
            auto t = node(Expr::Kind::Tuple, line);
            t->items.push_back(std::move(e));
            while (is_op(",")) {
              advance();
              if (is_op(")")) break;
              t->items.push_back(parse_expression());
            }
            e = std::move(t);
          }
          expect_op(")");
          return e;
        }
        if (tk.text == "[") {
          advance();
          auto l = node(Expr::Kind::List, line);
          while (!is_op("]")) {
            l->items.push_back(parse_expression());
            if (!is_op(",")) break;
            advance();
          }
          expect_op("]");
          return l;
        }
        if (tk.text == "{") {
          advance();
          auto d = node(Expr::Kind::Dict, line);
          while (!is_op("}")) {
            d->items.push_back(parse_expression());
            expect_op(":");
            d->items.push_back(parse_expression());
            if (!is_op(",")) break;
            advance();
          }
          expect_op("}");
          return d;
        }
        break;
      default: break;
    }
    fail("unexpected " + describe(tk) + " in an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (is_op(".")) {
        advance();
        if (cur().kind == Token::Kind::Int) {
          auto it = node(Expr::Kind::Item, line);
          auto idx = node(Expr::Kind::Literal, line);
          errno = 0;
          const long long n = std::strtoll(cur().text.c_str(), nullptr, 10);
          if (errno == ERANGE) fail("integer literal out of range");
          idx->value = Value::integer(n);
          advance();
          it->a = std::move(e);
          it->b = std::move(idx);
          e = std::move(it);
          continue;
        }
        auto at = node(Expr::Kind::Attr, line);
        at->name = expect_name("an attribute name after '.'");
        at->a = std::move(e);
        e = std::move(at);
      } else if (is_op("[")) {
        advance();
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), line);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    int colons = 0;
    if (!is_op(":")) parts[0] = parse_expression();
    while (is_op(":") && colons < 2) {
      advance();
      ++colons;
      if (!is_op(":") && !is_op("]")) parts[colons] = parse_expression();
    }
    expect_op("]");
    if (colons == 0) {
      auto it = node(Expr::Kind::Item, line);
      it->a = std::move(obj);
      it->b = std::move(parts[0]);
      return it;
    }
    auto sl = node(Expr::Kind::Slice, line);
    sl->a = std::move(obj);
    sl->items.push_back(std::move(parts[0]));
    sl->items.push_back(std::move(parts[1]));
    sl->items.push_back(std::move(parts[2]));
    return sl;
  }

  void parse_args(std::vector<ExprPtr>& pos, std::vector<std::pair<std::string, ExprPtr>>& kw) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail("unsupported construct '*args' / '**kwargs' in a call");
      if (cur().kind == Token::Kind::Name && peek().kind == Token::Kind::Op && peek().text == "=") {
        std::string k = cur().text;
        advance();
        advance();
        kw.emplace_back(std::move(k), parse_expression());
      } else {
        if (!kw.empty()) fail("a positional argument after a keyword argument");
        pos.push_back(parse_expression());
      }
      if (!is_op(",")) break;
      advance();
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee, int line) {
    if (callee->kind == Expr::Kind::Name) {
      called_.emplace_back(callee->name, line);
    } else if (callee->kind == Expr::Kind::Attr && !is_builtin_method(callee->name)) {
      fail("unsupported method '" + callee->name + "'");
    }
    auto c = node(Expr::Kind::Call, line);
    c->a = std::move(callee);
    parse_args(c->items, c->kwargs);
    return c;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      const int line = cur().line;
      if (is_op("|")) {
        advance();
        auto f = node(Expr::Kind::Filter, line);
        f->name = expect_name("a filter name after '|'");
        if (!is_builtin_filter(f->name))
          throw ParseError("unsupported filter '" + f->name + "' at line " + std::to_string(line), line);
        if (is_op("(")) parse_args(f->items, f->kwargs);
        f->a = std::move(e);
        e = std::move(f);
      } else if (is_name("is")) {
        advance();
        auto t = node(Expr::Kind::Test, line);
        if (is_name("not")) {
          t->negate = true;
          advance();
        }
        t->name = expect_name("a test name after 'is'");
        if (!is_builtin_test(t->name))
          throw ParseError("unsupported test '" + t->name + "' at line " + std::to_string(line), line);
        if (is_op("(")) {
          parse_args(t->items, t->kwargs);
        } else if ((cur().kind == Token::Kind::Name && !is_name("else") && !is_name("or") && !is_name("and") &&
                    !is_name("is") && !is_name("if") && !is_name("in") && !is_name("not")) ||
                   cur().kind == Token::Kind::String || cur().kind == Token::Kind::Int ||
                   cur().kind == Token::Kind::Float || is_op("[") || is_op("{")) {
          t->items.push_back(parse_postfix(parse_primary()));
        }
        t->a = std::move(e);
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e), line);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token>& t_;
  size_t p_ = 0;
  int depth_ = 0;
  int loops_ = 0;
  std::set<std::string> macros_;
  std::vector<std::pair<std::string, int>> called_;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace tandem::text::jinja
