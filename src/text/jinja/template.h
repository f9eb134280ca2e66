// A Jinja2 chat template, parsed once (at model load) and rendered per request.
//
//   auto t = jinja::Template::parse(source);        // ParseError: unsupported construct + line
//   std::string s = t.render(context_json);          // RenderError / RaisedError
//
// The oracle is python3-jinja2 in the environment HF transformers renders chat templates with
// (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), the loopcontrols
// extension, raise_exception and strftime_now as globals, and transformers' own tojson:
// json.dumps(x, ensure_ascii=False, indent=indent), keys in their order); llama.cpp's minja
// mirrors the same environment. tests/text/jinja_oracle.py compares the two byte for byte.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "text/jinja/ast.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/value.h"

namespace tandem::text::jinja {

class Template {
 public:
  // Throws ParseError naming what is unsupported or malformed and its line.
  static Template parse(const std::string& source);

  // `context`: an object whose members are the template's variables (messages, tools,
  // add_generation_prompt, bos_token, ...). Throws RenderError (RaisedError for raise_exception).
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits = {}) const;
  std::string render(const Value& context, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace tandem::text::jinja
