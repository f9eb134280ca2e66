// The tools' grammar (grammar/tool_grammar.h) in each family's call format: what it accepts is what
// text/tool_calls.h parses into calls, the fixed text of a call is forced, random walks through
// it always end in valid calls, and the free text of "auto" is everything but the trigger.
#include "grammar/tool_grammar.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_test_vocab.h"
#include "text/json_type.h"

namespace tandem::grammar {
namespace {

using text::Json;
using text::ToolCallFormat;

Json tools_json() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "tap", "description": "Tap an element",
      "parameters": {"type": "object", "properties": {
        "index": {"type": "integer", "minimum": 0, "maximum": 99},
        "long_press": {"type": "boolean"}}, "required": ["index"]}}},
    {"type": "function", "function": {"name": "type_text",
      "parameters": {"type": "object", "properties": {
        "text": {"type": "string"},
        "mode": {"type": "string", "enum": ["append", "replace"]}}, "required": ["mode", "text"]}}},
    {"type": "function", "function": {"name": "go_home"}}])");
}

class ToolGrammar {
 public:
  ToolGrammar(const Json& tools, const ToolGrammarOptions& o) : gbnf_(tool_call_grammar(tools, o).gbnf) {
    g_ = CompiledGrammar::compile(gbnf_, testing::vocab().index);
  }
  bool accepts(std::string_view text) const {
    const GrammarState s = g_->advance_bytes(g_->initial(), text);
    return s != kDeadState && g_->accepting(s);
  }
  bool prefix(std::string_view text) const { return g_->advance_bytes(g_->initial(), text) != kDeadState; }
  CompiledGrammar& grammar() const { return *g_; }
  const std::string& gbnf() const { return gbnf_; }

 private:
  std::string gbnf_;
  std::shared_ptr<CompiledGrammar> g_;
};

ToolGrammarOptions options(ToolCallFormat f, bool required) {
  ToolGrammarOptions o;
  o.format = f;
  o.required = required;
  return o;
}

const char* kPyTap = "<|tool_call_start|>[tap(index=3)]<|tool_call_end|>";
const char* kXmlTap = "<tool_call>\n<function=tap>\n<parameter=index>\n3\n</parameter>\n</function>\n</tool_call>";
const char* kXmlType =
    "<tool_call>\n<function=type_text>\n<parameter=text>\nhello\n</parameter>\n<parameter=mode>\nappend\n"
    "</parameter>\n</function>\n\n</tool_call>";
const char* kJsonTap = "<tool_call>\n{\"name\": \"tap\", \"arguments\": {\"index\": 3}}\n</tool_call>";

TEST(ToolGrammar, XmlRequiredAcceptsTheTemplatesFormatOnly) {
  const ToolGrammar g(tools_json(), options(ToolCallFormat::Xml, true));
  EXPECT_TRUE(g.accepts(kXmlTap)) << g.gbnf();
  EXPECT_TRUE(g.accepts("<tool_call>\n<function=tap>\n<parameter=index>\n42\n</parameter>\n<parameter=long_press>\n"
                        "true\n</parameter>\n</function>\n</tool_call>"));
  // Required parameters in declaration order (text, then mode), as json_schema.h orders keys.
  EXPECT_TRUE(g.accepts("<tool_call>\n<function=type_text>\n<parameter=text>\ntwo\nlines </parameter\n</parameter>\n"
                        "<parameter=mode>\nreplace\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_TRUE(g.accepts("<tool_call>\n<function=go_home>\n</function>\n</tool_call>"));
  EXPECT_TRUE(g.accepts(std::string(kXmlTap) + "\n" + kXmlTap));  // parallel by default
  EXPECT_FALSE(g.accepts(std::string("Sure. ") + kXmlTap));       // nothing before the calls
  EXPECT_FALSE(g.accepts("<tool_call>\n<function=tap>\n</function>\n</tool_call>"));  // index is required
  EXPECT_FALSE(g.prefix("<tool_call>\n<function=swipe"));                           // no such function
  EXPECT_FALSE(g.prefix("<tool_call>\n<function=tap>\n<parameter=index>\n100"));    // maximum 99
  EXPECT_FALSE(g.prefix("<tool_call>\n<function=tap>\n<parameter=index>\nthree"));  // an integer
  EXPECT_FALSE(g.prefix("<tool_call>\n<function=type_text>\n<parameter=text>\nx\n</parameter>\n<parameter=mode>\nerase"));  // the enum
  EXPECT_FALSE(g.prefix("<tool_call>\n<function=type_text>\n<parameter=text>\na</parameter>x"));  // a string value ends at the first </parameter>
  EXPECT_FALSE(g.accepts(kXmlType));         // "\n\n</tool_call>": not the format
  EXPECT_FALSE(g.accepts(""));
}

TEST(ToolGrammar, JsonRequiredAcceptsTheTemplatesFormat) {
  const ToolGrammar g(tools_json(), options(ToolCallFormat::Json, true));
  EXPECT_TRUE(g.accepts(kJsonTap)) << g.gbnf();
  EXPECT_TRUE(g.accepts("<tool_call>\n{\"name\": \"type_text\", \"arguments\": {\"text\": \"a \\\"b\\\"\", \"mode\": \"append\"}}\n</tool_call>"));
  EXPECT_TRUE(g.accepts("<tool_call>\n{\"name\": \"go_home\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_TRUE(g.accepts(std::string(kJsonTap) + "\n" + kJsonTap));
  EXPECT_FALSE(g.accepts("<tool_call>\n{\"name\": \"tap\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(g.prefix("<tool_call>\n{\"arguments\""));  // the name comes first
  EXPECT_FALSE(g.prefix("<tool_call>\n{\"name\": \"swipe"));
}

TEST(ToolGrammar, ParallelFalseIsExactlyOneCall) {
  ToolGrammarOptions o = options(ToolCallFormat::Xml, true);
  o.parallel = false;
  const ToolGrammar g(tools_json(), o);
  EXPECT_TRUE(g.accepts(kXmlTap));
  EXPECT_TRUE(g.grammar().complete(g.grammar().advance_bytes(g.grammar().initial(), kXmlTap)));
  EXPECT_FALSE(g.prefix(std::string(kXmlTap) + "\n"));
}

TEST(ToolGrammar, NamedFunctionOnly) {
  ToolGrammarOptions o = options(ToolCallFormat::Json, true);
  o.function = "go_home";
  const ToolGrammar g(tools_json(), o);
  EXPECT_TRUE(g.accepts("<tool_call>\n{\"name\": \"go_home\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(g.accepts(kJsonTap));
  o.function = "swipe";
  EXPECT_THROW(tool_call_grammar(tools_json(), o), GrammarError);
}

// LFM2: one list of Pythonic calls, keyword arguments required first, values JSON literals.
TEST(ToolGrammar, PythonRequiredAcceptsTheTemplatesFormat) {
  const ToolGrammar g(tools_json(), options(ToolCallFormat::Python, true));
  EXPECT_TRUE(g.accepts(kPyTap)) << g.gbnf();
  EXPECT_TRUE(g.accepts("<|tool_call_start|>[tap(index=3, long_press=true)]<|tool_call_end|>"));
  EXPECT_TRUE(g.accepts("<|tool_call_start|>[type_text(text=\"a \\\"b\\\"\", mode=\"append\"), go_home()]<|tool_call_end|>"));
  EXPECT_FALSE(g.accepts("<|tool_call_start|>[tap()]<|tool_call_end|>"));  // a required parameter missing
  EXPECT_FALSE(g.accepts("<|tool_call_start|>[]<|tool_call_end|>"));
  EXPECT_FALSE(g.prefix("<|tool_call_start|>[tap(long_press"));  // required first
  EXPECT_FALSE(g.prefix("<|tool_call_start|>[swipe"));
  Json optional_only = Json::parse(R"([{"name": "f", "parameters": {"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"type": "integer"}}}}])");
  const ToolGrammar o(optional_only, options(ToolCallFormat::Python, true));
  for (const char* call : {"f()", "f(a=1)", "f(b=2)", "f(a=1, b=2)"})
    EXPECT_TRUE(o.accepts(std::string("<|tool_call_start|>[") + call + "]<|tool_call_end|>")) << call << o.gbnf();
  EXPECT_FALSE(o.prefix("<|tool_call_start|>[f(, "));
  EXPECT_FALSE(o.prefix("<|tool_call_start|>[f(b=2, a"));
}

TEST(ToolGrammar, AutoIsFreeTextThenOptionalCalls) {
  for (const ToolCallFormat f : {ToolCallFormat::Xml, ToolCallFormat::Json}) {
    const ToolGrammar g(tools_json(), options(f, false));
    const std::string call = f == ToolCallFormat::Xml ? kXmlTap : kJsonTap;
    EXPECT_TRUE(g.accepts(""));
    EXPECT_TRUE(g.accepts("The menu is open. <tool_ <tool_cal <<tool_call <tool_calls>"));
    EXPECT_TRUE(g.accepts(call));
    EXPECT_TRUE(g.accepts("I will tap it.\n\n" + call));
    EXPECT_FALSE(g.prefix("I will tap it. <tool_call> now"));  // once opened, a call it is
    EXPECT_FALSE(g.accepts("text " + call + " more text"));   // nothing after the calls
    EXPECT_FALSE(g.accepts("text <tool_call>\n"));            // an unfinished call does not end
  }
}

TEST(ToolGrammar, PythonAutoIsFreeTextThenOptionalCalls) {
  const ToolGrammar g(tools_json(), options(ToolCallFormat::Python, false));
  EXPECT_TRUE(g.accepts(""));
  EXPECT_TRUE(g.accepts("The menu is open. <tool_call> <|tool_call_star"));
  EXPECT_TRUE(g.accepts(std::string("I will tap it.\n") + kPyTap));
  EXPECT_FALSE(g.prefix("I will tap it. <|tool_call_start|> now"));
  EXPECT_FALSE(g.accepts("text <|tool_call_start|>["));
}

TEST(ToolGrammar, ReasoningBeforeTheCalls) {
  // The test vocabulary has <think> and </think> as user-defined tokens: the grammar names them.
  const auto& v = testing::vocab();
  ToolGrammarOptions o = options(ToolCallFormat::Xml, true);
  o.reasoning = ToolReasoning::Open;
  o.special_token = special_token_test(*v.tok);
  const ToolGrammar g(tools_json(), o);
  EXPECT_NE(g.gbnf().find(" </think> "), std::string::npos) << g.gbnf();
  EXPECT_NE(g.gbnf().find("\"<tool_call>\""), std::string::npos) << g.gbnf();  // not a token: text
  CompiledGrammar& c = g.grammar();
  GrammarState s = c.advance_bytes(c.initial(), "Tap 3. <tool_call> is the format.");
  ASSERT_NE(s, kDeadState);
  EXPECT_FALSE(c.accepting(s));  // required: reasoning alone is not an answer
  const int32_t close = *v.tok->vocab().find("</think>");
  s = c.advance(s, close);
  ASSERT_NE(s, kDeadState);
  s = c.advance_bytes(s, std::string("\n\n") + kXmlTap);
  ASSERT_NE(s, kDeadState);
  EXPECT_TRUE(c.accepting(s));

  o.required = false;  // auto: the answer may end inside its reasoning, or after it with text
  const ToolGrammar a(tools_json(), o);
  EXPECT_TRUE(a.accepts("still thinking"));
  s = a.grammar().advance(a.grammar().advance_bytes(a.grammar().initial(), "hmm"), close);
  ASSERT_NE(s, kDeadState);
  EXPECT_TRUE(a.grammar().accepting(a.grammar().advance_bytes(s, "\n\nDone.")));
  EXPECT_TRUE(a.grammar().accepting(a.grammar().advance_bytes(s, std::string("\n\n") + kXmlTap)));

  o.reasoning = ToolReasoning::Optional;  // Qwen3: the model may open its own block
  o.required = true;
  const ToolGrammar q(tools_json(), o);
  EXPECT_TRUE(q.accepts(kXmlTap));
  const int32_t open = *v.tok->vocab().find("<think>");
  s = q.grammar().advance(q.grammar().initial(), open);
  ASSERT_NE(s, kDeadState);
  s = q.grammar().advance(q.grammar().advance_bytes(s, "x"), close);
  EXPECT_TRUE(q.grammar().accepting(q.grammar().advance_bytes(s, std::string("\n\n") + kXmlTap)));
}

// The text every sentence continues with from the start: forced drafts.
std::string forced_text(CompiledGrammar& g, GrammarState s) {
  std::vector<int32_t> forced;
  g.forced_tokens(s, forced);
  std::string out;
  for (int32_t t : forced) out += g.vocab().token_bytes(t);
  return out;
}

TEST(ToolGrammar, TagsNamesAndParameterNamesAreForced) {
  Json one = Json::array({tools_json()[0]});
  ToolGrammarOptions compact = options(ToolCallFormat::Xml, true);
  compact.whitespace = JsonWhitespace::Compact;
  const ToolGrammar x(one, compact);
  CompiledGrammar& g = x.grammar();
  // The tag, the only function's name and its required parameter, up to the value (the last
  // tokens may be held back where a longer token could span their end).
  const std::string f = forced_text(g, g.initial());
  EXPECT_TRUE(std::string("<tool_call>\n<function=tap>\n<parameter=index>\n").starts_with(f)) << f;
  EXPECT_GE(f.size(), std::string("<tool_call>\n<function=tap>\n<parameter=").size()) << f;
  // After the value: the parameter's close, then (long_press is optional) a choice.
  const GrammarState after = g.advance_bytes(g.initial(), "<tool_call>\n<function=tap>\n<parameter=index>\n7\n");
  ASSERT_NE(after, kDeadState);
  EXPECT_TRUE(forced_text(g, after).starts_with("</parameter>")) << forced_text(g, after);

  // Several functions: the name is forced once its first letters decide it.
  const ToolGrammar j(tools_json(), options(ToolCallFormat::Json, true));
  CompiledGrammar& jg = j.grammar();
  EXPECT_TRUE(std::string("<tool_call>\n{\"name\": \"").starts_with(forced_text(jg, jg.initial())));
  const GrammarState ty = jg.advance_bytes(jg.initial(), "<tool_call>\n{\"name\": \"ty");
  ASSERT_NE(ty, kDeadState);
  EXPECT_TRUE(forced_text(jg, ty).starts_with("pe_text\", \"arguments\": ")) << forced_text(jg, ty);
}

// Random walks (random allowed tokens until the grammar is complete) always end in calls that
// text/tool_calls.h parses, whose arguments fit the schemas.
TEST(ToolGrammar, RandomWalksEndInValidCalls) {
  Json tools = tools_json();
  tools[1]["function"]["parameters"]["properties"]["text"] = Json::parse(R"({"type": "string", "enum": ["a", "b c"]})");
  for (const ToolCallFormat f : {ToolCallFormat::Xml, ToolCallFormat::Json, ToolCallFormat::Python}) {
    ToolGrammarOptions o = options(f, true);
    o.parallel = false;
    o.whitespace = JsonWhitespace::Compact;
    const ToolGrammar tg(tools, o);
    CompiledGrammar& g = tg.grammar();
    std::mt19937_64 rng(11);
    for (int walk = 0; walk < 60; ++walk) {
      std::string text;
      GrammarState s = g.initial();
      for (int step = 0; step < 400 && !g.complete(s); ++step) {
        const auto mask = g.mask(s);
        std::vector<int32_t> allowed;  // end-of-generation left out: the walk goes on until complete
        for (size_t w = 0; w < mask->bits.size(); ++w)
          for (uint64_t b = mask->bits[w]; b; b &= b - 1) {
            const auto t = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(b)));
            if (!g.vocab().is_eog(t)) allowed.push_back(t);
          }
        ASSERT_FALSE(allowed.empty()) << text;
        const int32_t t = allowed[rng() % allowed.size()];
        text += g.vocab().token_bytes(t);
        s = g.advance(s, t);
        ASSERT_NE(s, kDeadState);
      }
      ASSERT_TRUE(g.accepting(s)) << text;
      const auto parsed = text::parse_tool_calls(text, f, tools);
      ASSERT_EQ(parsed.calls.size(), 1u) << text;
      EXPECT_EQ(parsed.content, "") << text;
      const Json args = Json::parse(parsed.calls[0].arguments);
      if (parsed.calls[0].name == "tap") {
        EXPECT_TRUE(args["index"].is_number_integer() && args["index"] >= 0 && args["index"] <= 99) << text;
      } else if (parsed.calls[0].name == "type_text") {
        EXPECT_TRUE(args["mode"] == "append" || args["mode"] == "replace") << text;
        EXPECT_TRUE(args["text"] == "a" || args["text"] == "b c") << text;
      } else {
        EXPECT_EQ(parsed.calls[0].name, "go_home");
        EXPECT_TRUE(args.empty()) << text;
      }
    }
  }
}

TEST(ToolGrammar, SchemaErrorsNameTheTool) {
  Json tools = tools_json();
  tools[2]["function"]["parameters"] = Json::parse(R"({"type": "object", "properties": {"x": {"type": "hiccup"}}})");
  for (const ToolCallFormat f : {ToolCallFormat::Xml, ToolCallFormat::Json, ToolCallFormat::Python}) {
    try {
      tool_call_grammar(tools, options(f, true));
      ADD_FAILURE() << "no error";
    } catch (const GrammarError& e) {
      EXPECT_NE(std::string(e.what()).find("tools[2].function.parameters/properties/x"), std::string::npos) << e.what();
    }
  }
  tools = tools_json();
  tools[0]["function"]["parameters"]["properties"]["a>b"] = Json::parse(R"({"type": "integer"})");
  EXPECT_THROW(tool_call_grammar(tools, options(ToolCallFormat::Xml, true)), GrammarError);
  EXPECT_THROW(tool_call_grammar(tools, options(ToolCallFormat::Python, true)), GrammarError);  // not a keyword
  EXPECT_NO_THROW(tool_call_grammar(tools, options(ToolCallFormat::Json, true)));  // a JSON key may
  // A string constraint the XML text cannot enforce is a warning naming it.
  tools = tools_json();
  tools[1]["function"]["parameters"]["properties"]["text"]["maxLength"] = 5;
  const auto g = tool_call_grammar(tools, options(ToolCallFormat::Xml, false));
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("tools[1].function.parameters/properties/text: 'maxLength'"), std::string::npos) << g.warnings[0];
}

TEST(ToolGrammar, PrefixedRulesKeepLiteralsAndClasses) {
  EXPECT_EQ(prefix_gbnf_rules("root ::= a-b \"x y\" [a-z\\]] c{1,2} # note\na-b ::= \"\\\"q\"\n", "t0-"),
            "t0-root ::= t0-a-b \"x y\" [a-z\\]] t0-c{1,2} # note\nt0-a-b ::= \"\\\"q\"\n");
}

}  // namespace
}  // namespace tandem::grammar
