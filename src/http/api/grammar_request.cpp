#include "http/api/grammar_request.h"

#include "http/api/api_error.h"
#include "serve/request/json_fields.h"

namespace tandem::http {

using serve::opt_bool;
using serve::opt_string;

namespace {

grammar::JsonWhitespace whitespace_of(const Json& body, grammar::JsonWhitespace dflt) {
  const auto t = body.find("tandem");
  if (t == body.end() || t->is_null()) return dflt;
  if (!t->is_object()) throw bad_request("'tandem' must be an object (Tandem's request extensions)", "tandem");
  const auto ws = opt_string(*t, "json_whitespace");
  if (!ws) return dflt;
  if (*ws == "flexible") return grammar::JsonWhitespace::Flexible;
  if (*ws == "compact") return grammar::JsonWhitespace::Compact;
  throw bad_request("'tandem.json_whitespace' must be \"flexible\" or \"compact\", got \"" + *ws + "\"",
                    "tandem.json_whitespace");
}

void from_schema(const Json& schema, const std::string& field, grammar::JsonWhitespace ws, serve::GrammarRequest& out) {
  if (!schema.is_object() && !schema.is_boolean())
    throw bad_request("'" + field + "' must be a JSON Schema object, got " + schema.type_name(), field);
  try {
    grammar::SchemaGrammar g = grammar::json_schema_to_gbnf(schema, grammar::SchemaOptions{.whitespace = ws});
    out.gbnf = std::move(g.gbnf);
    out.warnings = std::move(g.warnings);
    out.field = field;
  } catch (const grammar::GrammarError& e) {
    throw bad_request("'" + field + "': JSON schema conversion failed: " + e.what(), field);
  }
}

std::string grammar_text(const Json& body) {
  const auto it = body.find("grammar");
  if (it == body.end() || it->is_null()) return {};
  if (!it->is_string()) throw bad_request(std::string("'grammar' must be a GBNF string, got ") + it->type_name(), "grammar");
  return it->get<std::string>();
}

const Json* present(const Json& body, const char* key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

grammar::JsonWhitespace request_json_whitespace(const Json& body, grammar::JsonWhitespace default_whitespace) {
  return whitespace_of(body, default_whitespace);
}

serve::GrammarRequest parse_grammar_request(const Json& body, bool chat, grammar::JsonWhitespace default_whitespace) {
  serve::GrammarRequest out;
  const grammar::JsonWhitespace ws = whitespace_of(body, default_whitespace);
  const std::string gbnf = grammar_text(body);
  const Json* schema = present(body, "json_schema");
  const Json* format = chat ? present(body, "response_format") : nullptr;

  if (chat) {
    if (!gbnf.empty() && schema) throw bad_request("Cannot use both json_schema and grammar", "grammar");
    // {"type": "text"} is no constraint (OpenAI clients send it by default): a grammar may go with it.
    const bool text_format = format && format->is_object() && format->value("type", Json()) == "text";
    if (!gbnf.empty() && format && !text_format)
      throw bad_request("Cannot use both response_format and grammar", "grammar");
    if (!gbnf.empty()) {
      const Json* tools = present(body, "tools");
      const Json* choice = present(body, "tool_choice");  // a string, or an object naming a function
      const bool none = choice && choice->is_string() && choice->get<std::string>() == "none";
      if (tools && !tools->empty() && !none)
        throw bad_request("Cannot use custom grammar constraints with tools.", "grammar");
    }
  }
  if (format) {
    if (!format->is_object()) throw bad_request("'response_format' must be an object", "response_format");
    const auto type = opt_string(*format, "type");
    if (!type) throw bad_request("'response_format' needs a \"type\"", "response_format");
    if (*type == "text") {
      // unconstrained (a top-level json_schema still applies)
    } else if (*type == "json_object") {
      if (const Json* s = present(*format, "schema")) {
        from_schema(*s, "response_format.schema", ws, out);
      } else {
        out.gbnf = grammar::json_object_gbnf(grammar::SchemaOptions{.whitespace = ws});
        out.field = "response_format";
      }
      return out;
    } else if (*type == "json_schema") {
      const Json* js = present(*format, "json_schema");
      if (!js || !js->is_object())
        throw bad_request("'response_format.json_schema' must be an object with a \"schema\"", "response_format");
      const Json* s = present(*js, "schema");
      if (!s) throw bad_request("'response_format.json_schema.schema' is missing", "response_format.json_schema.schema");
      opt_string(*js, "name");  // type-checked; name and strict change nothing (as in llama.cpp)
      opt_bool(*js, "strict");
      from_schema(*s, "response_format.json_schema.schema", ws, out);
      return out;
    } else {
      throw bad_request("response_format type must be one of \"text\", \"json_object\" or \"json_schema\", but got: " + *type,
                        "response_format");
    }
  }
  if (!gbnf.empty()) {  // /completion: the grammar wins over json_schema, as in llama.cpp
    out.gbnf = gbnf;
    out.field = "grammar";
    return out;
  }
  if (schema) from_schema(*schema, "json_schema", ws, out);
  return out;
}

}  // namespace tandem::http
