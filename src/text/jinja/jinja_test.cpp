// The interpreter's own cases: what a load refuses (named, with its line), raise_exception, the
// whitespace rules, scoping, and the limits that bound a hostile template. The byte-for-byte
// comparison with python3-jinja2 over whole templates is tests/text/jinja_oracle.py.
#include <gtest/gtest.h>

#include <string>

#include "text/jinja/template.h"

namespace tandem::text::jinja {
namespace {

using Json = nlohmann::ordered_json;

std::string render(const std::string& src, const Json& ctx = Json::object()) {
  return Template::parse(src).render(ctx);
}

// The ParseError's message for `src` ("" when it parses).
std::string load_error(const std::string& src) {
  try {
    Template::parse(src);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(Jinja, UnsupportedConstructsAreLoadErrorsNamingThemAndTheirLine) {
  EXPECT_EQ(load_error("a\n{% include 'x' %}"), "unsupported construct '{% include %}' at line 2");
  EXPECT_EQ(load_error("{% extends 'base' %}"), "unsupported construct '{% extends %}' at line 1");
  EXPECT_EQ(load_error("\n\n{{ x | wordwrap(3) }}"), "unsupported filter 'wordwrap' at line 3");
  EXPECT_EQ(load_error("{% if x is escaped %}{% endif %}"), "unsupported test 'escaped' at line 1");
  EXPECT_EQ(load_error("\n{{ lipsum(2) }}"),
            "unsupported function 'lipsum' (not a macro of the template nor a known global) at line 2");
  EXPECT_EQ(load_error("{{ 'a'.format(1) }}"), "unsupported method 'format' at line 1");
  EXPECT_EQ(load_error("{% for x in y recursive %}{% endfor %}"), "unsupported construct 'recursive' loop at line 1");
  EXPECT_EQ(load_error("{% set x | upper %}a{% endset %}"), "unsupported construct 'set' block with a filter at line 1");
  EXPECT_EQ(load_error("{{ f(*args) }}"), "unsupported construct '*args' / '**kwargs' in a call at line 1");
  // Malformed templates: what was expected, where.
  EXPECT_EQ(load_error("{% if x %}\nno end"), "unexpected end of template (expected 'elif' or 'else' or 'endif') at line 2");
  EXPECT_EQ(load_error("{{ x "), "unterminated '{{' expression");
  EXPECT_EQ(load_error("{{ 'abc }}"), "unterminated string literal");
  EXPECT_EQ(load_error("{% endfor %}"), "unexpected 'endfor' at line 1");
  EXPECT_EQ(load_error("{% break %}"), "'break' outside a for loop at line 1");
  EXPECT_EQ(load_error("{{ x ? y }}"), "unexpected character '?' in a tag");
  // A macro called before its definition is fine (it is checked against the whole template).
  EXPECT_EQ(load_error("{{ m() }}{% macro m() %}x{% endmacro %}"), "");
}

TEST(Jinja, RaiseExceptionIsARaisedErrorWithTheTemplatesMessage) {
  const Template t = Template::parse("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  EXPECT_EQ(t.render(Json{{"messages", {{{"role", "user"}}}}}), "ok");
  try {
    t.render(Json{{"messages", {{{"role", "system"}}}}});
    FAIL();
  } catch (const RaisedError& e) {
    EXPECT_STREQ(e.what(), "System role not supported");
  }
  // Other render failures are RenderErrors naming the line.
  try {
    render("\n{{ missing.attr }}");
    FAIL();
  } catch (const RaisedError&) {
    FAIL();
  } catch (const RenderError& e) {
    EXPECT_EQ(std::string(e.what()), "'missing' is undefined (line 2)");
  }
  EXPECT_THROW(render("{{ 1 + 'a' }}"), RenderError);
  EXPECT_THROW(render("{{ 1 // 0 }}"), RenderError);
}

TEST(Jinja, WhitespaceControlAsHfRendersIt) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("{{ 'a' }}\n{{- 'b' -}}\n c"), "abc");
  EXPECT_EQ(render("a {# comment #}\nb"), "a b");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  // One trailing newline of the template is dropped; \r\n becomes \n.
  EXPECT_EQ(render("a\r\nb\n"), "a\nb");
}

TEST(Jinja, ScopingNamespacesAndLoops) {
  // A set inside a loop does not leak; a namespace carries state out.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "0");
  EXPECT_EQ(render("{% set ns = namespace(x=0) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "3");
  EXPECT_EQ(render("{% for i in 'ab' %}{{ loop.index }}{{ i }}{{ loop.revindex0 }}{% else %}none{% endfor %}"), "1a12b0");
  EXPECT_EQ(render("{% for i in [] %}x{% else %}none{% endfor %}"), "none");
  EXPECT_EQ(render("{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, b=2) }}"), "[1B][12]");
  EXPECT_EQ(render("{% set s %}in{{ 1 }}{% endset %}{{ s | upper }}"), "IN1");
  // Python's str() and repr() of values.
  EXPECT_EQ(render("{{ [1, 'a', none, true, 1.0, {'k': 'v'}] }}"), "[1, 'a', None, True, 1.0, {'k': 'v'}]");
  EXPECT_EQ(render("{{ x | tojson }}", Json{{"x", {{"é", "\"q\"\n"}, {"n", 1.5}}}}), "{\"é\": \"\\\"q\\\"\\n\", \"n\": 1.5}");
  EXPECT_THROW(render("{% set x = 1 %}{% set x.y = 2 %}"), RenderError);
}

TEST(Jinja, LimitsBoundAHostileTemplate) {
  RenderLimits small;
  small.max_steps = 10000;
  small.max_output_bytes = 1000;
  EXPECT_THROW(Template::parse("{% for i in range(100000) %}{{ i }}{% endfor %}").render(Json::object(), small), RenderError);
  EXPECT_THROW(Template::parse("{{ 'x' * 100000 }}").render(Json::object(), small), RenderError);
  EXPECT_THROW(Template::parse("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").render(Json::object(), small),
               RenderError);
  // Nesting deep enough to overflow a recursive parser is refused at load.
  EXPECT_THROW(Template::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), ParseError);
  EXPECT_THROW(Template::parse("{{ " + std::string(5000, '[')), ParseError);
}

}  // namespace
}  // namespace tandem::text::jinja
