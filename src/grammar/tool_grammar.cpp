#include "grammar/tool_grammar.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {

// A named namespace: the batch build compiles this folder's sources in one unit, and these
// helpers must not meet json_schema.cpp's.
namespace tool_grammar_impl {

bool is_rule_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// A GBNF string literal for `s` (every byte kept; quotes, backslashes and control bytes escaped).
std::string literal(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// One character inside a GBNF class [...].
std::string class_char(char c) {
  if (c == ']' || c == '[' || c == '^' || c == '-' || c == '\\') return std::string("\\") + c;
  return std::string(1, c);
}

// Rules `name-0` .. `name-(n-1)` generating exactly the texts that do not contain `w` (an ASCII
// word without a proper border, which the tags are), `name-0` the start: the states of the
// Knuth-Morris-Pratt automaton for w, each one a rule that may end or read one more character.
// Every text is accepted at each step, so masks stay permissive wherever the trigger is not
// being completed.
void avoid_rules(const std::string& name, std::string_view w, std::string& out) {
  const size_t n = w.size();
  std::vector<size_t> fail(n + 1, 0);
  for (size_t i = 1, k = 0; i < n; ++i) {
    while (k > 0 && w[i] != w[k]) k = fail[k];
    if (w[i] == w[k]) ++k;
    fail[i + 1] = k;
  }
  std::string distinct;
  for (char c : w)
    if (distinct.find(c) == std::string::npos) distinct += c;
  auto next = [&](size_t state, char c) {
    while (state > 0 && w[state] != c) state = fail[state];
    return w[state] == c ? state + 1 : 0;
  };
  std::string others = "[^";
  for (char c : distinct) others += class_char(c);
  others += "]";
  for (size_t s = 0; s < n; ++s) {
    out += name + "-" + std::to_string(s) + " ::= ( " + others + " " + name + "-0";
    for (char c : distinct) {
      const size_t t = next(s, c);
      if (t < n) out += " | " + literal(std::string(1, c)) + " " + name + "-" + std::to_string(t);
    }
    out += " )?\n";
  }
}

const text::Json& function_of(const text::Json& tool) {
  return tool.is_object() && tool.contains("function") ? tool["function"] : tool;
}

std::vector<std::string_view> types_of(const text::Json& schema) {
  std::vector<std::string_view> out;
  const auto t = schema.find("type");
  if (t == schema.end()) return out;
  if (t->is_string()) out.push_back(t->get_ref<const std::string&>());
  if (t->is_array())
    for (const auto& e : *t)
      if (e.is_string()) out.push_back(e.get_ref<const std::string&>());
  return out;
}

class Builder {
 public:
  Builder(const text::Json& tools, const ToolGrammarOptions& o) : tools_(tools), o_(o) {
    // An XML value is delimited by its lines: JSON without whitespace, so that nothing but the
    // value stands between the tags (the parser reads "true", not "true ", as a boolean).
    opt_.whitespace = o.format == text::ToolCallFormat::Xml ? JsonWhitespace::Compact : o.whitespace;
  }

  SchemaGrammar run() {
    if (!tools_.is_array() || tools_.empty()) throw GrammarError("tools: no tools to call");
    if (o_.format == text::ToolCallFormat::None) throw GrammarError("tools: this chat template has no tool-call format");
    std::string alternatives;
    bool named_found = false;
    for (size_t k = 0; k < tools_.size(); ++k) {
      const text::Json& f = function_of(tools_[k]);
      const auto name_it = f.find("name");
      if (name_it == f.end() || !name_it->is_string()) throw GrammarError("tools[" + std::to_string(k) + "]: no function name");
      const std::string& name = name_it->get_ref<const std::string&>();
      if (!o_.function.empty() && name != o_.function) continue;
      named_found = true;
      const std::string where = "tools[" + std::to_string(k) + "].function.parameters";
      const auto p = f.find("parameters");
      static const text::Json kNoParameters = text::Json::parse(R"({"type": "object", "properties": {}})");
      const text::Json& params = p != f.end() && !p->is_null() ? *p : kNoParameters;
      const std::string rule = "tc-fn" + std::to_string(k);
      const std::string body = o_.format == text::ToolCallFormat::Xml      ? xml_function(name, params, rule, where)
                               : o_.format == text::ToolCallFormat::Python ? python_function(name, params, rule, where)
                                                                           : json_function(name, params, rule, where);
      rules_ += rule + " ::= " + body + "\n";
      alternatives += (alternatives.empty() ? "" : " | ") + rule;
    }
    if (!named_found) throw GrammarError("tool_choice: no function named '" + o_.function + "' in tools");

    const bool python = o_.format == text::ToolCallFormat::Python;
    const std::string open_text = python ? "<|tool_call_start|>" : "<tool_call>";
    const std::string open = tag(open_text), close = tag(python ? "<|tool_call_end|>" : "</tool_call>");
    if (python) {
      // LFM2: one list of calls, separated by ", " as its template renders them.
      rules_ += "tc-call ::= " + alternatives + "\n";
      rules_ += "tc-calls ::= " + open + " \"[\" tc-call" + (o_.parallel ? " ( \", \" tc-call )*" : "") + " \"]\" " +
                close + "\n";
    } else {
      if (o_.format == text::ToolCallFormat::Xml)
        rules_ += "tc-call ::= " + open + " \"\\n<function=\" ( " + alternatives + " ) \"</function>\\n\" " + close + "\n";
      else
        rules_ += "tc-call ::= " + open + " \"\\n{\\\"name\\\": \\\"\" ( " + alternatives + " ) \"}\\n\" " + close + "\n";
      rules_ += std::string("tc-calls ::= tc-call") + (o_.parallel ? " ( \"\\n\" tc-call )*" : "") + "\n";
    }

    // What comes after the reasoning: calls only, or free text then calls (auto).
    std::string after;
    if (o_.required) {
      after = "tc-calls";
    } else {
      avoid_rules("tc-free", open_text, rules_);
      after = "tc-free-0 tc-calls?";
    }
    std::string root;
    switch (o_.reasoning) {
      case ToolReasoning::None:
        root = after;
        break;
      case ToolReasoning::Open:
        avoid_rules("tc-think", "</think>", rules_);
        root = o_.required ? "tc-think-0 " + tag("</think>") + " \"\\n\\n\" " + after
                           : "tc-think-0 ( " + tag("</think>") + " " + after + " )?";
        break;
      case ToolReasoning::Optional:
        avoid_rules("tc-think", "</think>", rules_);
        root = o_.required ? "( " + tag("<think>") + " tc-think-0 " + tag("</think>") + " \"\\n\\n\" )? " + after
                           : tag("<think>") + " tc-think-0 ( " + tag("</think>") + " " + after + " )? | " + after;
        break;
    }
    SchemaGrammar g;
    g.gbnf = "root ::= " + root + "\n" + rules_;
    g.warnings = std::move(warnings_);
    if (g.gbnf.size() > opt_.max_gbnf_bytes)
      throw GrammarError("tools: the tools' grammar would exceed " + std::to_string(opt_.max_gbnf_bytes) + " bytes");
    return g;
  }

 private:
  // A tag as a token terminal when it is one special token, else as text.
  std::string tag(const std::string& text) const {
    if (o_.special_token && o_.special_token(text)) return text;
    return literal(text);
  }

  // A schema converted and renamed under `prefix`; returns the name of its root rule.
  std::string embed(const text::Json& schema, const std::string& prefix, const std::string& where) {
    SchemaGrammar g;
    try {
      g = json_schema_to_gbnf(schema, opt_);
    } catch (const GrammarError& e) {
      throw GrammarError(where + e.what());
    }
    for (auto& w : g.warnings) warnings_.push_back(where + w);
    rules_ += prefix_gbnf_rules(g.gbnf, prefix);
    return prefix + "root";
  }

  std::string json_function(const std::string& name, const text::Json& params, const std::string& rule,
                            const std::string& where) {
    const std::string args = embed(params, rule + "-", where);
    return literal(name + "\", \"arguments\": ") + " " + args;
  }

  // A parameter's value inside <parameter=P>\n ... \n</parameter>.
  std::string xml_value(const text::Json* schema, const std::string& prefix, const std::string& where) {
    if (!schema || !schema->is_object()) return text_value();
    const auto types = types_of(*schema);
    if (std::find(types.begin(), types.end(), "string") == types.end()) {
      // JSON under the schema; the root's definitions go along, for its $refs.
      text::Json s = *schema;
      if (root_params_)
        for (const char* defs : {"$defs", "definitions"})
          if (root_params_->contains(defs) && !s.contains(defs)) s[defs] = (*root_params_)[defs];
      return embed(s, prefix, where);
    }
    // The raw text (the template writes a string as it is): one of the literals when the schema
    // lists them, any text without "</parameter>" otherwise.
    std::vector<std::string> literals;
    if (const auto c = schema->find("const"); c != schema->end() && c->is_string()) literals.push_back(*c);
    if (const auto e = schema->find("enum"); e != schema->end() && e->is_array()) {
      for (const auto& v : *e)
        if (v.is_string()) literals.push_back(v);
    }
    if (!literals.empty()) {
      std::string alt;
      for (const auto& l : literals) alt += (alt.empty() ? "" : " | ") + literal(l);
      return "( " + alt + " )";
    }
    for (const char* k : {"minLength", "maxLength", "pattern", "format"})
      if (schema->contains(k))
        warnings_.push_back(where + ": '" + k + "' is not enforced on a string parameter written as XML text");
    return text_value();
  }

  std::string text_value() {
    if (!text_rules_) {
      avoid_rules("tc-text", "</parameter>", rules_);
      text_rules_ = true;
    }
    return "tc-text-0";
  }

  // The `required` names of a parameters schema, each once, in their order.
  static std::vector<std::string> required_names(const text::Json& params) {
    std::vector<std::string> required;
    if (const auto r = params.find("required"); r != params.end() && r->is_array())
      for (const auto& x : *r)
        if (x.is_string() && std::find(required.begin(), required.end(), x.get<std::string>()) == required.end())
          required.push_back(x);
    return required;
  }

  // Keywords a call format that lists declared parameters one by one cannot enforce: a warning each.
  void warn_unenforced(const text::Json& params, const std::string& where, const char* written_as) {
    for (const char* k : {"additionalProperties", "patternProperties", "anyOf", "oneOf", "allOf", "$ref"})
      if (params.contains(k) && !(std::string(k) == "additionalProperties" && params[k] == false))
        warnings_.push_back(where + ": '" + k + "' is not enforced on parameters written " + written_as +
                            " (declared properties only)");
  }

  std::string xml_function(const std::string& name, const text::Json& params, const std::string& rule,
                           const std::string& where) {
    if (!params.is_object()) throw GrammarError(where + ": parameters must be a JSON Schema object");
    root_params_ = &params;
    std::string body = literal(name + ">\n");
    const auto props = params.find("properties");
    const std::vector<std::string> required = required_names(params);
    warn_unenforced(params, where, "as XML");
    auto param = [&](const std::string& p, const text::Json* schema, size_t i) {
      // The parser reads a name up to '>' on one line (text/tool_calls.h): another would force a
      // call that never parses.
      if (p.empty() || p.find_first_of(">\n") != std::string::npos)
        throw GrammarError(where + "/properties/" + p + ": a parameter name written as <parameter=NAME> cannot be empty or hold '>' or a line break");
      const std::string value = xml_value(schema, rule + "-p" + std::to_string(i) + "-", where + "/properties/" + p);
      return literal("<parameter=" + p + ">\n") + " " + value + " " + literal("\n</parameter>\n");
    };
    const bool has_props = props != params.end() && props->is_object();
    size_t i = 0;
    // Required parameters first, in declaration order (as json_schema.h orders object keys),
    // then those required but not declared, then the optional ones.
    if (has_props)
      for (const auto& [p, s] : props->items())
        if (std::find(required.begin(), required.end(), p) != required.end()) body += " " + param(p, &s, i++);
    for (const auto& p : required)
      if (!has_props || !props->contains(p)) body += " " + param(p, nullptr, i++);
    if (has_props)
      for (const auto& [p, s] : props->items())
        if (std::find(required.begin(), required.end(), p) == required.end()) body += " ( " + param(p, &s, i++) + " )?";
    root_params_ = nullptr;
    return body;
  }

  // LFM2: NAME(KEY=VALUE, ...), each VALUE JSON under its schema (JSON's strings, numbers, lists,
  // objects, true / false / null are Python literals the parser reads, text/tool_calls.h);
  // required parameters first in declaration order, then the optional ones, each at most once.
  std::string python_function(const std::string& name, const text::Json& params, const std::string& rule,
                              const std::string& where) {
    if (!params.is_object()) throw GrammarError(where + ": parameters must be a JSON Schema object");
    // The parser reads names of letters, digits, '_', '.' and '-' (text/tool_calls.h).
    auto python_name = [](const std::string& n) {
      return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      });
    };
    if (!python_name(name))
      throw GrammarError(where + ": a function name written as a Python call must be letters, digits, '_', '.' or '-'");
    root_params_ = &params;
    const auto props = params.find("properties");
    const bool has_props = props != params.end() && props->is_object();
    const std::vector<std::string> required = required_names(params);
    warn_unenforced(params, where, "as a Python call");
    size_t i = 0;
    auto param = [&](const std::string& p, const text::Json* schema) {
      if (!python_name(p))
        throw GrammarError(where + "/properties/" + p + ": a parameter name written as a Python keyword must be letters, digits, '_', '.' or '-'");
      text::Json s = schema && schema->is_object() ? *schema : text::Json::object();
      for (const char* defs : {"$defs", "definitions"})
        if (params.contains(defs) && !s.contains(defs)) s[defs] = params[defs];
      return literal(p + "=") + " " + embed(s, rule + "-p" + std::to_string(i++) + "-", where + "/properties/" + p);
    };
    std::vector<std::string> req_items, opt_items;
    if (has_props)
      for (const auto& [p, s] : props->items())
        if (std::find(required.begin(), required.end(), p) != required.end()) req_items.push_back(param(p, &s));
    for (const auto& p : required)
      if (!has_props || !props->contains(p)) req_items.push_back(param(p, nullptr));
    if (has_props)
      for (const auto& [p, s] : props->items())
        if (std::find(required.begin(), required.end(), p) == required.end()) opt_items.push_back(param(p, &s));
    root_params_ = nullptr;
    std::string args;
    for (const auto& r : req_items) args += (args.empty() ? "" : " \", \" ") + r;
    // The optional ones in order, each after ", " — or, with no required one before them, the
    // first one written without it: one alternative per optional parameter that may come first.
    auto optional_after = [&](size_t from) {
      std::string out;
      for (size_t k = from; k < opt_items.size(); ++k) out += " ( \", \" " + opt_items[k] + " )?";
      return out;
    };
    if (!req_items.empty()) {
      args += optional_after(0);
    } else if (!opt_items.empty()) {
      std::string alt;
      for (size_t k = 0; k < opt_items.size(); ++k) alt += (alt.empty() ? "" : " | ") + opt_items[k] + optional_after(k + 1);
      args = "( " + alt + " )?";
    }
    return literal(name + "(") + " " + args + " " + literal(")");
  }

  const text::Json& tools_;
  const ToolGrammarOptions& o_;
  SchemaOptions opt_;
  std::string rules_;
  std::vector<std::string> warnings_;
  bool text_rules_ = false;
  const text::Json* root_params_ = nullptr;
};

}  // namespace tool_grammar_impl

std::string prefix_gbnf_rules(std::string_view s, std::string_view prefix) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  // Copies from i through the closing `close` (skipping escaped characters).
  auto copy_until = [&](char close) {
    out += s[i++];
    while (i < s.size() && s[i] != close) {
      if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
      out += s[i++];
    }
    if (i < s.size()) out += s[i++];
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      copy_until('"');
    } else if (c == '[') {
      copy_until(']');
    } else if (c == '{') {
      copy_until('}');
    } else if (c == '<') {
      copy_until('>');
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') out += s[i++];
    } else if (tool_grammar_impl::is_rule_char(c)) {
      out += prefix;
      while (i < s.size() && tool_grammar_impl::is_rule_char(s[i])) out += s[i++];
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::function<bool(std::string_view)> special_token_test(const text::Tokenizer& tok) {
  return [&tok](std::string_view text) {
    const auto id = tok.vocab().find(text);
    if (!id) return false;
    const text::TokenType t = tok.vocab().token_type(*id);
    return t == text::TokenType::Control || t == text::TokenType::UserDefined;
  };
}

SchemaGrammar tool_call_grammar(const text::Json& tools, const ToolGrammarOptions& options) {
  return tool_grammar_impl::Builder(tools, options).run();
}

}  // namespace tandem::grammar
