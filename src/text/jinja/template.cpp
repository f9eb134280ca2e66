#include "text/jinja/template.h"

#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace tandem::text::jinja {

Template Template::parse(const std::string& source) {
  Template t;
  t.body_ = std::make_shared<const Body>(jinja::parse(tokenize(source)));
  return t;
}

std::string Template::render(const nlohmann::ordered_json& context, const RenderLimits& limits) const {
  return render(Value::from_json(context), limits);
}

std::string Template::render(const Value& context, const RenderLimits& limits) const {
  Interpreter in(limits);
  return in.render(*body_, context);
}

}  // namespace tandem::text::jinja
