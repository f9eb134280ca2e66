// JSON Schema -> GBNF. The shape of the output follows llama.cpp's converter
// (common/json-schema-to-grammar.cpp, spec/constrained.md §2.2) so that the same schema
// constrains a model the same way: the same primitive rules, SPACE_RULE after every value and
// after `{ [ , :`, required properties first, optional ones as its chain of alternatives,
// additionalProperties false unless given, `{}` as any object. Where llama.cpp accepts JSON the
// schema forbids (required names without a property, sibling keywords of anyOf / $ref ignored,
// a declared name accepted again as an additional key), this converter is stricter, never
// looser: every sentence of the grammar validates (tests/grammar/schema_conformance.py checks
// it against python3-jsonschema), except where a warning says a keyword was ignored.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "grammar/integer_range.h"
#include "grammar/schema_pattern.h"
#include "text/json_type.h"

namespace tandem::grammar {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kMaxRepetition = 2000;  // GrammarLimits::max_repetition

// A subschema nothing can satisfy (types with nothing in common, `false`, an empty range...):
// an error at the top, but an alternative of anyOf / oneOf or an optional property that is
// unsatisfiable is simply left out.
class Unsatisfiable : public GrammarError {
 public:
  using GrammarError::GrammarError;
};

// Keywords that only annotate: silently fine.
const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title", "description", "$schema", "$id", "id", "default", "examples",
                                          "$comment", "deprecated", "readOnly", "writeOnly", "$anchor",
                                          "$dynamicAnchor", "$vocabulary", "contentMediaType",
                                          "contentEncoding", "contentSchema", "$defs", "definitions", "format"};
  return k;
}

// Keywords the converter understands (some only for some types: number bounds are reported
// where they are ignored).
const std::set<std::string>& understood() {
  static const std::set<std::string> k = {"type", "enum", "const", "properties", "required", "additionalProperties",
                                          "items", "prefixItems", "additionalItems", "minItems", "maxItems",
                                          "minLength", "maxLength", "pattern", "minimum", "maximum",
                                          "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref"};
  return k;
}

// JSON Schema's constraint keywords the converter ignores: reported. Keywords of no vocabulary
// are ignored silently, as JSON Schema itself ignores them (they also hold subschemas that
// only $ref reaches, e.g. {"my-defs": {...}}).
const std::set<std::string>& unsupported() {
  static const std::set<std::string> k = {
      "not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "uniqueItems",
      "multipleOf", "minProperties", "maxProperties", "contains", "minContains", "maxContains",
      "patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
      "$recursiveRef"};
  return k;
}

bool is_constraint(const std::string& k) { return understood().count(k) || unsupported().count(k) || k == "format"; }

bool has_constraints(const ojson& s) {
  for (auto it = s.begin(); it != s.end(); ++it)
    if (is_constraint(it.key())) return true;
  return false;
}

// A GBNF string literal.
std::string literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          static const char* hexd = "0123456789ABCDEF";
          out += "\\x";
          out += hexd[c >> 4];
          out += hexd[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string dump_compact(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string pointer_escape(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string where(const std::string& path) { return path.empty() ? "/" : path; }

std::string sanitize_name(const std::string& name) {
  std::string out;
  bool dash = false;
  for (unsigned char c : name) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
      dash = false;
    } else if (!dash) {  // a run of other characters becomes one '-' (llama.cpp's INVALID_RULE_CHARS_RE)
      out += '-';
      dash = true;
    }
  }
  return out.empty() ? "x" : out;
}

const std::set<std::string>& type_names() {
  static const std::set<std::string> k = {"null", "boolean", "object", "array", "number", "integer", "string"};
  return k;
}

class Converter {
 public:
  Converter(const ojson& root, const SchemaOptions& opt) : root_(root), opt_(opt) {
    flexible_ = opt.whitespace == JsonWhitespace::Flexible;
  }

  SchemaGrammar run() {
    if (!root_.is_object())
      throw GrammarError("/: a schema must be a JSON object, got " + std::string(root_.type_name()));
    ref_rules_["#"] = "root";
    reserved_.insert("root");
    rules_["root"] = "";
    rules_["root"] = visit_body(root_, "root", "", 0);
    SchemaGrammar g;
    g.gbnf = "root ::= " + rules_["root"] + "\n";
    for (const auto& [name, body] : rules_)
      if (name != "root") g.gbnf += name + " ::= " + body + "\n";
    if (g.gbnf.size() > opt_.max_gbnf_bytes) too_large();
    g.warnings = warnings_;
    return g;
  }

  // Any value whose top level is an object.
  std::string object_grammar() {
    rules_["root"] = primitive("object");
    std::string out = "root ::= object\n";
    for (const auto& [name, body] : rules_)
      if (name != "root") out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  // ---- rules ----------------------------------------------------------------------------

  // The whitespace after a value or punctuation (none in compact mode).
  std::string sp() {
    if (!flexible_) return "";
    primitive("space");
    return " space";
  }

  [[noreturn]] void too_large() const {
    throw GrammarError("/: schema too large: the grammar would exceed " + std::to_string(opt_.max_gbnf_bytes) +
                       " bytes or " + std::to_string(opt_.max_rules) + " rules");
  }

  // Adds `name ::= body` under a valid, unused name (an existing rule with the same body is
  // reused) and returns the name.
  std::string add_rule(const std::string& name, const std::string& body) {
    std::string base = sanitize_name(name);
    if (primitive_body(base)) base += "-";  // user names never shadow the primitives
    std::string n = base;
    for (int i = 1;; ++i) {
      auto it = rules_.find(n);
      if (it == rules_.end()) break;
      if (it->second == body && !reserved_.count(n)) return n;
      n = base + std::to_string(i);
    }
    bytes_ += n.size() + body.size() + 6;
    if (rules_.size() >= opt_.max_rules || bytes_ > opt_.max_gbnf_bytes) too_large();
    rules_[n] = body;
    journal_.push_back(n);
    return n;
  }

  // Reserves a unique name whose body comes later ($ref targets, so that recursion can name it).
  std::string reserve_rule(const std::string& name) {
    std::string base = sanitize_name(name);
    if (primitive_body(base)) base += "-";
    std::string n = base;
    for (int i = 1; rules_.count(n); ++i) n = base + std::to_string(i);
    rules_[n] = "";
    reserved_.insert(n);
    journal_.push_back(n);
    return n;
  }

  // The primitive rules of llama.cpp (PRIMITIVE_RULES, STRING_FORMAT_RULES) with their
  // dependencies; nullptr for other names.
  const char* primitive_body(const std::string& name) const {
    static const std::map<std::string, std::pair<std::string, std::string>> flex = primitives(" space");
    static const std::map<std::string, std::pair<std::string, std::string>> comp = primitives("");
    const auto& m = flexible_ ? flex : comp;
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second.first.c_str();
  }

  static std::map<std::string, std::pair<std::string, std::string>> primitives(const std::string& S) {
    // name -> {body, space-separated dependencies}
    return {
        {"space", {R"(| " " | "\n"{1,2} [ \t]{0,20})", ""}},
        {"boolean", {R"(("true" | "false"))" + S, S.empty() ? "" : "space"}},
        {"decimal-part", {"[0-9]{1,16}", ""}},
        {"integral-part", {"[0] | [1-9] [0-9]{0,15}", ""}},
        {"number", {R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?)" + S,
                    "integral-part decimal-part" + std::string(S.empty() ? "" : " space")}},
        {"integer", {R"(("-"? integral-part))" + S, "integral-part" + std::string(S.empty() ? "" : " space")}},
        {"value", {"object | array | string | number | boolean | null", "object array string number boolean null"}},
        {"object", {"\"{\"" + S + " ( string \":\"" + S + " value (\",\"" + S + " string \":\"" + S +
                        " value)* )? \"}\"" + S,
                    "string value" + std::string(S.empty() ? "" : " space")}},
        {"array", {"\"[\"" + S + " ( value (\",\"" + S + " value)* )? \"]\"" + S,
                   "value" + std::string(S.empty() ? "" : " space")}},
        {"uuid", {R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"")" + S,
                  S.empty() ? "" : "space"}},
        {"char", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", ""}},
        // One character as minLength / maxLength count them (code points): a surrogate pair
        // written as two \u escapes is one, a lone surrogate escape is left out (llama.cpp
        // counts `char`s, so "\ud83d\ude00" passes a minLength of 2 there).
        {"code-point", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" ([0-9a-cA-CeEfF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | [dD] [89abAB] [0-9a-fA-F]{2} [\\] "u" [dD] [c-fC-F] [0-9a-fA-F]{2})))",
                        ""}},
        {"string", {R"("\"" char* "\"")" + S, "char" + std::string(S.empty() ? "" : " space")}},
        {"null", {R"("null")" + S, S.empty() ? "" : "space"}},
        {"date", {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", ""}},
        {"time", {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
                  ""}},
        {"date-time", {R"(date "T" time)", "date time"}},
        {"date-string", {R"("\"" date "\"")" + S, "date" + std::string(S.empty() ? "" : " space")}},
        {"time-string", {R"("\"" time "\"")" + S, "time" + std::string(S.empty() ? "" : " space")}},
        {"date-time-string", {R"("\"" date-time "\"")" + S, "date-time" + std::string(S.empty() ? "" : " space")}},
    };
  }

  std::string primitive(const std::string& name) {
    static const auto flex = primitives(" space");
    static const auto comp = primitives("");
    const auto& m = flexible_ ? flex : comp;
    const auto& [body, deps] = m.at(name);
    if (rules_.emplace(name, body).second) {
      journal_.push_back(name);
      bytes_ += name.size() + body.size() + 6;
      size_t i = 0;
      while (i < deps.size()) {
        size_t j = deps.find(' ', i);
        if (j == std::string::npos) j = deps.size();
        primitive(deps.substr(i, j - i));
        i = j + 1;
      }
    }
    return name;
  }


  // Rules added by an attempt that turned out unsatisfiable are taken back (they may name a
  // $ref rule that never got its body).
  struct Mark {
    size_t rules, refs;
  };
  Mark mark() const { return {journal_.size(), ref_journal_.size()}; }
  void roll_back(Mark m) {
    while (journal_.size() > m.rules) {
      rules_.erase(journal_.back());
      reserved_.erase(journal_.back());
      journal_.pop_back();
    }
    while (ref_journal_.size() > m.refs) {
      ref_rules_.erase(ref_journal_.back());
      ref_journal_.pop_back();
    }
  }

  void warn(const std::string& path, const std::string& kw) {
    if (opt_.strict) throw GrammarError(where(path) + ": unsupported keyword '" + kw + "'");
    std::string w = where(path) + ": unsupported keyword '" + kw + "' (ignored)";
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
  }
  void note(const std::string& w) {
    if (opt_.strict) throw GrammarError(w);
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
  }

  [[noreturn]] static void error(const std::string& path, const std::string& what) {
    throw GrammarError(where(path) + ": " + what);
  }
  [[noreturn]] static void unsat(const std::string& path, const std::string& what) {
    throw Unsatisfiable(where(path) + ": " + what);
  }

  // ---- visiting -------------------------------------------------------------------------

  // A rule name for subschema `s` (a primitive's own name where that is all it is).
  std::string visit(const ojson& s, const std::string& name, const std::string& path, int depth) {
    std::string body = visit_body(s, name, path, depth);
    if (rules_.count(body)) return body;  // already a rule (a primitive, a $ref's): no alias
    return add_rule(name, body);
  }

  // The GBNF expression for subschema `s`.
  std::string visit_body(const ojson& s, const std::string& name, const std::string& path, int depth) {
    if (depth > opt_.max_depth) error(path, "schema nested deeper than " + std::to_string(opt_.max_depth));
    if (++visits_ > opt_.max_visits)
      error(path, "schema too complex: more than " + std::to_string(opt_.max_visits) + " subschemas to convert");
    if (s.is_boolean()) {
      if (s.get<bool>()) return primitive("value");
      unsat(path, "schema 'false' matches nothing");
    }
    if (!s.is_object()) error(path, "a schema must be a JSON object or a boolean, got " + std::string(s.type_name()));

    report_unknown(s, path);

    if (s.contains("$ref")) return visit_ref(s, name, path, depth);

    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      const ojson& alts = s[k];
      if (!alts.is_array() || alts.empty()) error(path + "/" + k, std::string(k) + " must be a non-empty array");
      // Sibling keywords apply to every alternative: (S and (A or B)) == ((S and A) or (S and B)).
      ojson rest = s;
      rest.erase(k);
      const bool distribute = has_constraints(rest);
      std::vector<std::string> parts;
      std::optional<std::string> first_unsat;
      for (size_t i = 0; i < alts.size(); ++i) {
        const std::string sub = path + "/" + k + "/" + std::to_string(i);
        if (alts[i].is_boolean() && !alts[i].get<bool>()) continue;
        std::string alt_name = name == "root" ? "alternative-" + std::to_string(i) : name + "-" + std::to_string(i);
        const Mark m = mark();
        try {
          ojson alt = distribute ? merge(rest, resolve_component(alts[i], sub, 0), sub) : alts[i];
          parts.push_back(visit(alt, alt_name, sub, depth + 1));
        } catch (const Unsatisfiable& e) {
          roll_back(m);
          if (!first_unsat) first_unsat = e.what();
        }
      }
      if (parts.empty()) unsat(path + "/" + k, "no alternative can match" + (first_unsat ? " (" + *first_unsat + ")" : ""));
      std::string body;
      for (size_t i = 0; i < parts.size(); ++i) body += (i ? " | " : "") + parts[i];
      return body;
    }

    if (s.contains("allOf")) {
      const ojson& comps = s["allOf"];
      if (!comps.is_array()) error(path + "/allOf", "allOf must be an array");
      ojson merged = s;
      merged.erase("allOf");
      for (size_t i = 0; i < comps.size(); ++i) {
        const std::string sub = path + "/allOf/" + std::to_string(i);
        if (comps[i].is_boolean()) {
          if (!comps[i].get<bool>()) unsat(sub, "schema 'false' matches nothing");
          continue;
        }
        merged = merge(merged, resolve_component(comps[i], sub, 0), sub);
      }
      return visit_body(merged, name, path, depth + 1);
    }

    if (s.contains("type") && s["type"].is_array()) {
      const ojson& types = s["type"];
      if (types.empty()) error(path + "/type", "type must not be an empty array");
      std::vector<std::string> parts;
      for (size_t i = 0; i < types.size(); ++i) {
        if (!types[i].is_string()) error(path + "/type", "type must be a string or an array of strings");
        ojson one = s;
        one["type"] = types[i];
        parts.push_back(visit(one, (name == "root" ? "" : name + "-") + types[i].get<std::string>(), path, depth + 1));
      }
      if (parts.size() == 1) return parts[0];
      std::string body;
      for (size_t i = 0; i < parts.size(); ++i) body += (i ? " | " : "") + parts[i];
      return body;
    }

    std::optional<std::string> type;
    if (s.contains("type")) {
      if (!s["type"].is_string()) error(path + "/type", "type must be a string or an array of strings");
      type = s["type"].get<std::string>();
      if (!type_names().count(*type)) error(path + "/type", "unknown type '" + *type + "'");
    }

    if (s.contains("const")) {
      if (type && !text::json_has_type(s["const"], *type)) unsat(path + "/const", "const does not have type '" + *type + "'");
      return literal(dump_compact(s["const"])) + sp();
    }
    if (s.contains("enum")) {
      const ojson& e = s["enum"];
      if (!e.is_array()) error(path + "/enum", "enum must be an array");
      std::vector<std::string> alts;
      for (const auto& v : e) {
        if (type && !text::json_has_type(v, *type)) continue;  // both keywords must hold
        std::string lit = literal(dump_compact(v));
        if (std::find(alts.begin(), alts.end(), lit) == alts.end()) alts.push_back(lit);
      }
      if (alts.empty()) unsat(path + "/enum", "no enum value can match");
      std::string body = "(";
      for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
      return body + ")" + sp();
    }

    if (!type) {
      // An untyped schema whose keywords belong to one kind of value constrains that kind and
      // lets the others through; the grammar takes the constrained kind only (stricter, as
      // llama.cpp does for untyped `properties`). Keywords of several kinds: their union.
      std::vector<std::string> kinds;
      auto any_of = [&](std::initializer_list<const char*> ks) {
        for (const char* k : ks)
          if (s.contains(k)) return true;
        return false;
      };
      if (any_of({"properties", "required", "additionalProperties"})) kinds.push_back("object");
      if (any_of({"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) kinds.push_back("array");
      if (any_of({"minLength", "maxLength", "pattern"}) || supported_format(s)) kinds.push_back("string");
      if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) kinds.push_back("number");
      if (kinds.empty()) {
        // llama.cpp: `{}` is any object; anything else without constraints is any value.
        if (s.empty()) return primitive("object");
        return primitive("value");
      }
      if (kinds.size() == 1) {
        type = kinds[0];
      } else {
        std::vector<std::string> parts;
        for (const auto& k : kinds) {
          ojson one = s;
          one["type"] = k;
          parts.push_back(visit(one, (name == "root" ? "" : name + "-") + k, path, depth + 1));
        }
        std::string body;
        for (size_t i = 0; i < parts.size(); ++i) body += (i ? " | " : "") + parts[i];
        return body;
      }
    }

    const std::string& t = *type;
    if (t == "object") return object_body(s, name, path, depth);
    if (t == "array") return array_body(s, name, path, depth);
    if (t == "string") return string_body(s, path);
    if (t == "integer") return integer_body(s, path);
    if (t == "number") return number_body(s, path);
    if (t == "boolean") return primitive("boolean");
    return primitive("null");
  }

  void report_unknown(const ojson& s, const std::string& path) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (unsupported().count(k)) warn(path, k);
    }
    if (s.contains("format") && s["format"].is_string() && !supported_format(s)) {
      // In draft 2020-12 `format` only annotates; the converter enforces the four llama.cpp does.
      note(where(path) + ": format '" + s["format"].get<std::string>() + "' not enforced (ignored)");
    }
  }

  static bool supported_format(const ojson& s) {
    if (!s.contains("format") || !s["format"].is_string()) return false;
    const std::string f = s["format"].get<std::string>();
    return f == "date" || f == "time" || f == "date-time" || f == "uuid" ||
           (f.size() == 5 && f.rfind("uuid", 0) == 0 && f[4] >= '1' && f[4] <= '5');
  }

  // ---- $ref -----------------------------------------------------------------------------

  const ojson& resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#')
      error(path + "/$ref", "unsupported reference '" + ref + "' (only local references '#/...' are supported)");
    if (ref == "#") return root_;
    if (ref.size() < 2 || ref[1] != '/')
      error(path + "/$ref", "unsupported reference '" + ref + "' (anchors are not supported; use '#/$defs/...')");
    // JSON pointer, after percent-decoding (URI fragment).
    std::string decoded;
    for (size_t i = 1; i < ref.size(); ++i) {
      if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit(static_cast<unsigned char>(ref[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(ref[i + 2]))) {
        decoded += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        decoded += ref[i];
      }
    }
    const ojson* cur = &root_;
    size_t i = 1;
    while (i <= decoded.size()) {
      size_t j = decoded.find('/', i);
      if (j == std::string::npos) j = decoded.size();
      std::string tok = decoded.substr(i, j - i), key;
      for (size_t k = 0; k < tok.size(); ++k) {
        if (tok[k] == '~' && k + 1 < tok.size() && (tok[k + 1] == '0' || tok[k + 1] == '1')) {
          key += tok[k + 1] == '0' ? '~' : '/';
          ++k;
        } else {
          key += tok[k];
        }
      }
      if (cur->is_object() && cur->contains(key)) {
        cur = &(*cur)[key];
      } else if (cur->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(key) < cur->size()) {
        cur = &(*cur)[std::stoul(key)];
      } else {
        error(path + "/$ref", "unresolvable reference '" + ref + "'");
      }
      i = j + 1;
    }
    return *cur;
  }

  std::string visit_ref(const ojson& s, const std::string& name, const std::string& path, int depth) {
    if (!s["$ref"].is_string()) error(path + "/$ref", "$ref must be a string");
    const std::string ref = s["$ref"].get<std::string>();
    const ojson& target = resolve(ref, path);
    ojson rest = s;
    rest.erase("$ref");
    if (has_constraints(rest)) {
      // Keywords beside $ref apply too (draft 2019-09 on; draft 7 ignored them): inline one level.
      if (target.is_boolean() && !target.get<bool>()) unsat(path + "/$ref", "schema 'false' matches nothing");
      return visit_body(merge(target.is_boolean() ? ojson::object() : target, rest, path), name, path, depth + 1);
    }
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;  // done, or being converted (recursion)
    const std::string last = ref.substr(ref.find_last_of('/') + 1);
    const std::string rule = reserve_rule(last.empty() ? "ref" : last);
    ref_rules_[ref] = rule;
    ref_journal_.push_back(ref);
    std::string body = visit_body(target, rule, ref.substr(1), depth + 1);
    rules_[rule] = body;
    bytes_ += rule.size() + body.size() + 6;
    if (bytes_ > opt_.max_gbnf_bytes) too_large();
    return rule;
  }

  // A schema with its top-level $ref (chain) inlined, for merging.
  ojson resolve_component(const ojson& c, const std::string& path, int hops) {
    if (!c.is_object() || !c.contains("$ref")) return c;
    if (hops > 32) error(path + "/$ref", "reference chain too long");
    if (!c["$ref"].is_string()) error(path + "/$ref", "$ref must be a string");
    const std::string ref = c["$ref"].get<std::string>();
    const ojson& target = resolve(ref, path);
    ojson rest = c;
    rest.erase("$ref");
    ojson t = resolve_component(target, path, hops + 1);
    if (t.is_boolean()) {
      if (!t.get<bool>()) unsat(path + "/$ref", "schema 'false' matches nothing");
      return rest;
    }
    return merge(t, rest, path);
  }

  // ---- allOf: merging two schemas into one that both hold for -----------------------------

  ojson merge(ojson a, const ojson& b_in, const std::string& path) {
    if (++visits_ > opt_.max_visits)
      error(path, "schema too complex: more than " + std::to_string(opt_.max_visits) + " subschemas to convert");
    if (b_in.is_boolean()) {
      if (!b_in.get<bool>()) unsat(path, "schema 'false' matches nothing");
      return a;
    }
    if (!b_in.is_object()) error(path, "a schema must be a JSON object or a boolean");
    if (!a.is_object()) a = ojson::object();
    ojson b = b_in;
    // A $ref inside one side stays a constraint of its own.
    if (b.contains("$ref")) {
      ojson r = ojson::object();
      r["$ref"] = b["$ref"];
      b.erase("$ref");
      b["allOf"] = ojson::array({r});
    }
    if (a.contains("$ref")) {
      ojson r = ojson::object();
      r["$ref"] = a["$ref"];
      a.erase("$ref");
      if (!a.contains("allOf")) a["allOf"] = ojson::array();
      a["allOf"].push_back(r);
    }
    // additionalProperties of one side constrains the properties the other side declares.
    auto constrain_extra = [&](ojson& props, const ojson& other) {
      if (!other.contains("additionalProperties")) return;
      const ojson& ap = other["additionalProperties"];
      const ojson* other_props = other.contains("properties") ? &other["properties"] : nullptr;
      for (auto it = props.begin(); it != props.end(); ++it) {
        if (other_props && other_props->contains(it.key())) continue;
        if (ap.is_boolean() && ap.get<bool>()) continue;
        if (ap.is_boolean()) {
          it.value() = false;
        } else {
          it.value() = ojson{{"allOf", ojson::array({it.value(), ap})}};
        }
      }
    };
    if (a.contains("properties") && a["properties"].is_object()) constrain_extra(a["properties"], b);
    if (b.contains("properties") && b["properties"].is_object()) constrain_extra(b["properties"], a);

    for (auto it = b.begin(); it != b.end(); ++it) {
      const std::string& k = it.key();
      const ojson& v = it.value();
      if (k == "$defs" || k == "definitions") continue;
      if (!is_constraint(k)) {
        if (!a.contains(k)) a[k] = v;
        continue;
      }
      if (!a.contains(k)) {
        a[k] = v;
        continue;
      }
      ojson& av = a[k];
      if (k == "type") {
        auto as_set = [](const ojson& t) {
          std::set<std::string> out;
          if (t.is_string()) out.insert(t.get<std::string>());
          if (t.is_array())
            for (const auto& x : t)
              if (x.is_string()) out.insert(x.get<std::string>());
          return out;
        };
        std::set<std::string> x = as_set(av), y = as_set(v), both;
        for (const auto& t : x) {
          if (y.count(t)) both.insert(t);
          else if (t == "integer" && y.count("number")) both.insert("integer");
        }
        for (const auto& t : y)
          if (t == "integer" && x.count("number")) both.insert("integer");
        if (both.empty()) unsat(path + "/type", "allOf: the types have nothing in common");
        av = both.size() == 1 ? ojson(*both.begin()) : ojson(std::vector<std::string>(both.begin(), both.end()));
      } else if (k == "properties" && av.is_object() && v.is_object()) {
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (av.contains(p.key()))
            av[p.key()] = ojson{{"allOf", ojson::array({av[p.key()], p.value()})}};
          else
            av[p.key()] = p.value();
        }
      } else if (k == "required" && av.is_array() && v.is_array()) {
        for (const auto& r : v)
          if (std::find(av.begin(), av.end(), r) == av.end()) av.push_back(r);
      } else if ((k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems") && av.is_number() &&
                 v.is_number()) {
        if (v.get<double>() > av.get<double>()) av = v;
      } else if ((k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems") && av.is_number() &&
                 v.is_number()) {
        if (v.get<double>() < av.get<double>()) av = v;
      } else if (k == "enum" && av.is_array() && v.is_array()) {
        ojson out = ojson::array();
        for (const auto& x : av)
          if (std::find(v.begin(), v.end(), x) != v.end()) out.push_back(x);
        if (out.empty()) unsat(path + "/enum", "allOf: the enums have no value in common");
        av = out;
      } else if (k == "const") {
        if (av != v) unsat(path + "/const", "allOf: two different consts");
      } else if (k == "additionalProperties") {
        if (av.is_boolean() && !av.get<bool>()) continue;
        if (v.is_boolean()) {
          if (!v.get<bool>()) av = false;
          continue;
        }
        if (av.is_boolean()) av = v;
        else av = ojson{{"allOf", ojson::array({av, v})}};
      } else if (k == "items" && av.is_object() && v.is_object()) {
        av = ojson{{"allOf", ojson::array({av, v})}};
      } else if (k == "allOf" && av.is_array() && v.is_array()) {
        for (const auto& x : v) av.push_back(x);
      } else if (k == "anyOf" || k == "oneOf") {
        // Two unions: keep one here, the other as a nested constraint.
        if (!a.contains("allOf")) a["allOf"] = ojson::array();
        a["allOf"].push_back(ojson{{k, v}});
      } else if (av != v) {
        note(where(path) + ": allOf: two different '" + k + "' (the second is ignored)");
      }
    }
    return a;
  }

  // ---- objects --------------------------------------------------------------------------

  std::string object_body(const ojson& s, const std::string& name, const std::string& path, int depth) {
    const std::string prefix = name == "root" ? "" : name + "-";
    ojson props = ojson::object();
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) error(path + "/properties", "properties must be an object");
      props = s["properties"];
    }
    std::vector<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) error(path + "/required", "required must be an array of strings");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) error(path + "/required", "required must be an array of strings");
        required.push_back(r.get<std::string>());
      }
    }
    const bool has_ap = s.contains("additionalProperties");
    const ojson ap = has_ap ? s["additionalProperties"] : ojson(false);  // llama.cpp: none by default
    if (!ap.is_boolean() && !ap.is_object()) error(path + "/additionalProperties", "must be a schema");
    if (!s.contains("properties") && !s.contains("required") && ap.is_boolean() && ap.get<bool>() == true)
      return primitive("object");
    if (!s.contains("properties") && !s.contains("required") && !has_ap) return primitive("object");

    // Required names without a property are still required; their value follows
    // additionalProperties (llama.cpp drops them, which accepts objects without them).
    for (const auto& r : required) {
      if (props.contains(r)) continue;
      if (ap.is_boolean() && !ap.get<bool>() && has_ap)
        unsat(path + "/required", "required property '" + r + "' is forbidden by additionalProperties");
      props[r] = ap.is_object() ? ap : ojson(true);
    }

    std::vector<std::string> req, opt, names, order;
    std::map<std::string, std::string> kv;
    for (auto it = props.begin(); it != props.end(); ++it) {
      const std::string& key = it.key();
      const std::string sub = path + "/properties/" + pointer_escape(key);
      const bool is_req = std::find(required.begin(), required.end(), key) != required.end();
      names.push_back(key);  // declared names are never additional keys, even when forbidden
      if (it.value().is_boolean() && !it.value().get<bool>()) {
        if (is_req) unsat(sub, "required property '" + key + "' has schema 'false'");
        continue;
      }
      std::string value_rule;
      const Mark m = mark();
      try {
        value_rule = visit(it.value(), prefix + key, sub, depth + 1);
      } catch (const Unsatisfiable&) {
        if (is_req) throw;
        roll_back(m);
        continue;  // no value can match: the property cannot appear
      }
      kv[key] = add_rule(prefix + key + "-kv",
                         literal(dump_compact(ojson(key))) + sp() + " \":\"" + sp() + " " + value_rule);
      (is_req ? req : opt).push_back(key);
      order.push_back(key);
    }
    const bool extra = (ap.is_boolean() && ap.get<bool>()) || ap.is_object();
    const std::string kExtra = "\x01*";  // not a JSON key a schema can declare... (bytes, not text)
    if (extra) {
      std::string value_rule = ap.is_object() ? visit(ap, prefix + "additional-value", path + "/additionalProperties",
                                                      depth + 1)
                                              : primitive("value");
      std::string key_rule = names.empty() ? primitive("string") : add_rule(prefix + "additional-k", not_strings(names));
      kv[kExtra] = add_rule(prefix + "additional-kv", key_rule + " \":\"" + sp() + " " + value_rule);
      opt.push_back(kExtra);
      order.push_back(kExtra);
    }
    if (opt_.order == PropertyOrder::Declaration)
      return "\"{\"" + sp() + declared_order(order, req, kv, kExtra, prefix) + " \"}\"" + sp();

    std::string body = "\"{\"" + sp();
    for (size_t i = 0; i < req.size(); ++i) body += (i ? " \",\"" + sp() + " " : " ") + kv[req[i]];
    if (!opt.empty()) {
      body += " (";
      if (!req.empty()) body += " \",\"" + sp() + " (";
      // llama.cpp's chain: alternative i starts with optional property i, then any later ones
      // in order, each behind a comma (`*-rest` rules share the tails).
      std::function<std::string(size_t, bool)> chain = [&](size_t i, bool first_optional) {
        const std::string& k = opt[i];
        const std::string& r = kv[k];
        const std::string comma = "( \",\"" + sp() + " " + r + " )";
        std::string out;
        if (first_optional)
          out = comma + (k == kExtra ? "*" : "?");
        else
          out = r + (k == kExtra ? " " + comma + "*" : "");
        if (i + 1 < opt.size())
          out += " " + add_rule(prefix + (k == kExtra ? std::string("additional") : k) + "-rest", chain(i + 1, true));
        return out;
      };
      for (size_t i = 0; i < opt.size(); ++i) body += (i ? " | " : " ") + chain(i, false);
      if (!req.empty()) body += " )";
      body += " )?";
    }
    body += " \"}\"" + sp();
    return body;
  }

  // Properties in the schema's order, each optional one skippable where it stands: rule
  // (i, first) is "the properties from i on", `first` when nothing came before (no comma).
  std::string declared_order(const std::vector<std::string>& order, const std::vector<std::string>& req,
                             std::map<std::string, std::string>& kv, const std::string& extra,
                             const std::string& prefix) {
    std::map<std::pair<size_t, bool>, std::string> memo;
    const std::string comma = "\",\"" + sp() + " ";
    std::function<std::string(size_t, bool)> from = [&](size_t i, bool first) -> std::string {
      if (i == order.size()) return "";
      if (auto it = memo.find({i, first}); it != memo.end()) return it->second;
      const std::string& key = order[i];
      const std::string& r = kv[key];
      std::string expr;
      if (key == extra) {  // always last: any number of them
        expr = first ? "( " + r + " ( " + comma + r + " )* )?" : "( " + comma + r + " )*";
      } else {
        const std::string next = from(i + 1, false);
        const std::string with = (first ? "" : comma) + r + (next.empty() ? "" : " " + next);
        if (std::find(req.begin(), req.end(), key) != req.end()) {
          expr = with;
        } else {
          const std::string skip = from(i + 1, first);
          expr = skip.empty() ? "( " + with + " )?" : "( " + with + " | " + skip + " )";
        }
      }
      const std::string base = prefix + (key == extra ? std::string("additional") : key);
      return memo[{i, first}] = add_rule(base + (first ? "-first" : "-next"), expr);
    };
    const std::string all = from(0, true);
    return all.empty() ? "" : " " + all;
  }

  // A JSON string (with its quotes) that is none of `names` (compared as canonical JSON
  // text): a trie over the names' characters; at every node, either a child's character, or
  // any other character followed by anything, or the end when the node is not a name.
  std::string not_strings(const std::vector<std::string>& names) {
    struct Node {
      std::map<std::string, Node> kids;  // one JSON-encoded character -> subtree
      bool end = false;
    };
    Node trie;
    for (const auto& n : names) {
      std::string enc = dump_compact(ojson(n));
      enc = enc.substr(1, enc.size() - 2);
      Node* cur = &trie;
      for (size_t i = 0; i < enc.size();) {
        size_t len = 1;
        const auto c = static_cast<unsigned char>(enc[i]);
        if (c == '\\') len = enc[i + 1] == 'u' ? 6 : 2;
        else if (c >= 0xF0) len = 4;
        else if (c >= 0xE0) len = 3;
        else if (c >= 0xC0) len = 2;
        cur = &cur->kids[enc.substr(i, len)];
        i += len;
      }
      cur->end = true;
    }
    const std::string ch = primitive("char");
    std::function<std::string(const Node&)> walk = [&](const Node& node) {
      std::vector<std::string> alts;
      std::string raw_excl, esc_excl;
      for (const auto& [c, kid] : node.kids) {
        std::string rest = walk(kid);
        alts.push_back(literal(c) + (rest.empty() ? "" : " " + rest));
        if (c[0] == '\\') {
          if (c[1] != 'u') esc_excl += c[1] == '"' || c[1] == '\\' ? std::string("\\") + c[1] : std::string(1, c[1]);
        } else if (c.size() == 1) {
          raw_excl += c == "]" || c == "[" ? "\\" + c : c == "-" ? "\\x2D" : c == "^" ? "\\x5E" : c;
        } else {
          uint32_t cp = 0;
          const auto b0 = static_cast<unsigned char>(c[0]);
          cp = c.size() == 2 ? (b0 & 0x1F) : c.size() == 3 ? (b0 & 0x0F) : (b0 & 0x07);
          for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(c[k]) & 0x3F);
          char buf[16];
          std::snprintf(buf, sizeof buf, cp < 0x10000 ? "\\u%04X" : "\\U%08X", cp);
          raw_excl += buf;
        }
      }
      // Another character: then anything may follow.
      std::string other = "[^\"\\\\\\x7F\\x00-\\x1F" + raw_excl + "]";
      std::string esc = "[\\\\] ([\"\\\\bfnrt" + std::string() + "] | \"u\" [0-9a-fA-F]{4})";
      if (!esc_excl.empty()) {
        std::string allowed;
        for (char e : std::string("\"\\bfnrt")) {
          std::string token = e == '"' || e == '\\' ? std::string("\\") + e : std::string(1, e);
          if (esc_excl.find(token) == std::string::npos) allowed += token;
        }
        esc = "[\\\\] (" + (allowed.empty() ? std::string() : "[" + allowed + "] | ") + "\"u\" [0-9a-fA-F]{4})";
      }
      alts.push_back("(" + other + " | " + esc + ") " + ch + "*");
      std::string out = "(";
      for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
      out += ")";
      if (!node.end) out += "?";  // the string may end here
      return out;
    };
    return "\"\\\"\" " + walk(trie) + " \"\\\"\"" + sp();
  }

  // ---- arrays ---------------------------------------------------------------------------

  static int count_keyword(const ojson& s, const char* k, const std::string& path) {
    if (!s.contains(k)) return -1;
    const ojson& v = s[k];
    if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>())
      error(path + "/" + k, std::string(k) + " must be a non-negative integer");
    const double d = v.get<double>();
    return d > 1e9 ? 1000000000 : static_cast<int>(d);
  }

  // `item` repeated min..max times with `sep` between (llama.cpp's build_repetition).
  std::string repetition(const std::string& item, int min, int max, const std::string& sep) {
    const bool has_max = max >= 0;
    if (has_max && max == 0) return "";
    if (min == 0 && max == 1) return item + "?";
    if (sep.empty()) {
      if (min == 1 && !has_max) return item + "+";
      if (min == 0 && !has_max) return item + "*";
      return item + "{" + std::to_string(min) + "," + (has_max ? std::to_string(max) : "") + "}";
    }
    std::string result = item + " " + repetition("(" + sep + " " + item + ")", min == 0 ? 0 : min - 1,
                                                 has_max ? max - 1 : -1, "");
    return min == 0 ? "(" + result + ")?" : result;
  }

  // Clamps repetition bounds to what GBNF can hold: a larger minimum cannot be met, a larger
  // maximum is dropped (llama.cpp's parser does the same silently; here it is a warning).
  void clamp_bounds(int& min, int& max, const std::string& path, const char* min_kw, const char* max_kw) {
    if (min > kMaxRepetition)
      error(path + "/" + min_kw, std::string(min_kw) + " above " + std::to_string(kMaxRepetition) + " is not supported");
    if (max > kMaxRepetition) {
      note(where(path) + ": " + max_kw + " above " + std::to_string(kMaxRepetition) + " not enforced (ignored)");
      max = -1;
    }
    if (max >= 0 && max < min) unsat(path, std::string(max_kw) + " is below " + min_kw);
  }

  std::string array_body(const ojson& s, const std::string& name, const std::string& path, int depth) {
    const std::string prefix = name == "root" ? "" : name + "-";
    int min = std::max(0, count_keyword(s, "minItems", path));
    int max = count_keyword(s, "maxItems", path);
    const std::string sep = "\",\"" + sp();
    const std::string open = "\"[\"" + sp(), close = "\"]\"" + sp();

    // Tuples: prefixItems (2020-12) or an items array (draft 7), then `items` / additionalItems.
    const ojson* tuple = nullptr;
    const ojson* rest = nullptr;
    std::string tuple_kw, rest_kw;
    if (s.contains("prefixItems")) {
      tuple = &s["prefixItems"], tuple_kw = "prefixItems";
      if (s.contains("items")) rest = &s["items"], rest_kw = "items";
    } else if (s.contains("items") && s["items"].is_array()) {
      tuple = &s["items"], tuple_kw = "items";
      if (s.contains("additionalItems")) rest = &s["additionalItems"], rest_kw = "additionalItems";
    }
    if (tuple) {
      if (!tuple->is_array()) error(path + "/" + tuple_kw, tuple_kw + " must be an array");
      // llama.cpp: exactly the tuple's items (JSON Schema also allows fewer: stricter here).
      size_t n = tuple->size();
      if (max >= 0 && static_cast<size_t>(max) < n) n = static_cast<size_t>(max);
      std::vector<std::string> items;
      for (size_t i = 0; i < n; ++i) {
        const ojson& it = (*tuple)[i];
        const std::string sub = path + "/" + tuple_kw + "/" + std::to_string(i);
        if (it.is_boolean() && !it.get<bool>()) {
          n = i;  // nothing can stand here, so the array ends before it
          break;
        }
        items.push_back(visit(it, prefix + "tuple-" + std::to_string(i), sub, depth + 1));
      }
      if (static_cast<int>(n) < min && !(rest && !(rest->is_boolean() && !rest->get<bool>())))
        unsat(path + "/minItems", "minItems cannot be met by the tuple");
      std::string body = open;
      for (size_t i = 0; i < n; ++i) body += (i ? " " + sep + " " : " ") + items[i];
      if (rest && !(rest->is_boolean() && !rest->get<bool>()) && (max < 0 || static_cast<size_t>(max) > n)) {
        std::string item = visit(*rest, prefix + "additional-item", path + "/" + rest_kw, depth + 1);
        int rmin = std::max(0, min - static_cast<int>(n)), rmax = max < 0 ? -1 : max - static_cast<int>(n);
        clamp_bounds(rmin, rmax, path, "minItems", "maxItems");
        if (n == 0) {
          body += " " + repetition(item, rmin, rmax, sep);
        } else {
          body += " " + repetition("(" + sep + " " + item + ")", rmin, rmax, "");
        }
      }
      return body + " " + close;
    }

    std::string item;
    if (s.contains("items")) {
      const ojson& it = s["items"];
      if (it.is_boolean() && !it.get<bool>()) {
        if (min > 0) unsat(path + "/minItems", "minItems cannot be met when items is false");
        return open + " " + close;
      }
      item = visit(it, prefix + "item", path + "/items", depth + 1);
    } else if (min == 0 && max < 0) {
      return primitive("array");
    } else {
      item = primitive("value");
    }
    clamp_bounds(min, max, path, "minItems", "maxItems");
    std::string reps = repetition(item, min, max, sep);
    return open + (reps.empty() ? "" : " " + reps) + " " + close;
  }

  // ---- strings --------------------------------------------------------------------------

  std::string string_body(const ojson& s, const std::string& path) {
    const bool has_len = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) error(path + "/pattern", "pattern must be a string");
      if (has_len) {
        if (s.contains("minLength")) warn(path, "minLength");
        if (s.contains("maxLength")) warn(path, "maxLength");
      }
      if (supported_format(s)) warn(path, "format");
      std::string inner;
      try {
        inner = pattern_to_gbnf(s["pattern"].get<std::string>(), primitive("char"));
      } catch (const GrammarError& e) {
        error(path + "/pattern", std::string(e.what()) + " (in '" + s["pattern"].get<std::string>() + "')");
      }
      return "\"\\\"\" " + (inner.empty() ? "" : inner + " ") + "\"\\\"\"" + sp();
    }
    if (supported_format(s)) {
      if (has_len) {
        if (s.contains("minLength")) warn(path, "minLength");
        if (s.contains("maxLength")) warn(path, "maxLength");
      }
      const std::string f = s["format"].get<std::string>();
      if (f.rfind("uuid", 0) == 0) return primitive("uuid");
      return primitive(f + "-string");
    }
    if (has_len) {
      int min = std::max(0, count_keyword(s, "minLength", path));
      int max = count_keyword(s, "maxLength", path);
      clamp_bounds(min, max, path, "minLength", "maxLength");
      std::string reps = repetition(primitive("code-point"), min, max, "");
      return "\"\\\"\" " + (reps.empty() ? "" : reps + " ") + "\"\\\"\"" + sp();
    }
    return primitive("string");
  }

  // ---- integers -------------------------------------------------------------------------

  // Calls take(value, is_min, exclusive) for each of minimum, exclusiveMinimum, maximum and
  // exclusiveMaximum (in that order) that s has as a number: integer_body's and number_body's
  // keywords. Draft 4's boolean exclusive* (a modifier of minimum / maximum) is warned about and
  // skipped; any other non-number is an error.
  template <class Take>
  void for_each_bound(const ojson& s, const std::string& path, Take take) {
    struct Keyword {
      const char* name;
      bool is_min, exclusive;
    };
    static constexpr Keyword kBounds[] = {{"minimum", true, false},
                                          {"exclusiveMinimum", true, true},
                                          {"maximum", false, false},
                                          {"exclusiveMaximum", false, true}};
    for (const Keyword& k : kBounds) {
      if (!s.contains(k.name)) continue;
      const ojson& v = s[k.name];
      if (v.is_boolean()) {
        warn(path, k.name);
        continue;
      }
      if (!v.is_number()) error(path + "/" + k.name, std::string(k.name) + " must be a number");
      take(v, k.is_min, k.exclusive);
    }
  }

  // build()'s range rule and sp(); when build finds no `what` within the bounds, unsatisfiable.
  template <class Build>
  std::string bounded_range(const std::string& path, const char* what, Build build) {
    std::string range;
    try {
      range = build();
    } catch (const GrammarError& e) {
      unsat(path, std::string("no ") + what + " satisfies the bounds: " + e.what());
    }
    return range + sp();
  }

  std::string integer_body(const ojson& s, const std::string& path) {
    std::optional<int64_t> lo, hi;
    for_each_bound(s, path, [&](const ojson& v, bool is_min, bool exclusive) {
      // Clamped one past the 16-digit cap: beyond it the range is empty (or unbounded) anyway.
      constexpr int64_t cap = kMaxJsonInteger + 1;
      int64_t b;
      if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        b = u > static_cast<uint64_t>(cap) ? cap : static_cast<int64_t>(u);
        b += is_min ? (exclusive ? 1 : 0) : (exclusive ? -1 : 0);
      } else if (v.is_number_integer()) {
        b = std::clamp<int64_t>(v.get<int64_t>(), -cap, cap);
        b += is_min ? (exclusive ? 1 : 0) : (exclusive ? -1 : 0);
      } else {
        const double d = v.get<double>();
        double c = is_min ? (exclusive ? std::floor(d) + 1 : std::ceil(d)) : (exclusive ? std::ceil(d) - 1 : std::floor(d));
        c = std::clamp(c, -static_cast<double>(cap), static_cast<double>(cap));
        b = static_cast<int64_t>(c);
      }
      if (is_min)
        lo = lo ? std::max(*lo, b) : b;
      else
        hi = hi ? std::min(*hi, b) : b;
    });
    if (!lo && !hi) return primitive("integer");
    return bounded_range(path, "integer", [&] { return integer_range_gbnf(lo, hi); });
  }

  // Numbers with bounds: no exponent, integral part and fraction as number_range_gbnf
  // builds them (a subset of the range's numbers; every one of them is in range).
  std::string number_body(const ojson& s, const std::string& path) {
    std::optional<NumberBound> lo, hi;
    for_each_bound(s, path, [&](const ojson& v, bool is_min, bool exclusive) {
      const NumberBound b{v.get<double>(), exclusive};
      auto& cur = is_min ? lo : hi;
      const bool tighter = !cur || (is_min ? b.value > cur->value : b.value < cur->value) ||
                           (b.value == cur->value && b.exclusive);
      if (tighter) cur = b;
    });
    if (!lo && !hi) return primitive("number");
    return bounded_range(path, "number", [&] { return number_range_gbnf(lo, hi); });
  }

  const ojson& root_;
  SchemaOptions opt_;
  bool flexible_ = true;
  std::map<std::string, std::string> rules_;
  std::set<std::string> reserved_;
  std::unordered_map<std::string, std::string> ref_rules_;
  std::vector<std::string> warnings_;
  std::vector<std::string> journal_, ref_journal_;
  size_t visits_ = 0;
  size_t bytes_ = 0;
};

}  // namespace

SchemaGrammar json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaOptions& opt) {
  return Converter(schema, opt).run();
}

SchemaGrammar json_schema_to_gbnf(const nlohmann::json& schema, const SchemaOptions& opt) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()), opt);
}

SchemaGrammar json_schema_text_to_gbnf(std::string_view schema_text, const SchemaOptions& opt) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::exception& e) {
    throw GrammarError(std::string("/: the schema is not valid JSON: ") + e.what());
  }
  return json_schema_to_gbnf(j, opt);
}

std::string json_object_gbnf(const SchemaOptions& opt) {
  const nlohmann::ordered_json empty = nlohmann::ordered_json::object();
  return Converter(empty, opt).object_grammar();
}

}  // namespace tandem::grammar
