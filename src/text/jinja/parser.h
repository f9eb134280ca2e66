// Jinja tokens to statements and expressions, with jinja2's grammar and precedence. Everything a
// template names is checked here, at load: a tag, filter, test, function or method the
// interpreter does not implement is a ParseError naming it and its line.
#pragma once

#include <vector>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace tandem::text::jinja {

Body parse(const std::vector<Token>& tokens);

}  // namespace tandem::text::jinja
