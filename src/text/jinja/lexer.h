// Splits a Jinja template into text and the tokens inside its tags, as python jinja2's lexer does
// under the environment HF transformers renders chat templates with: trim_blocks (the newline
// after a block or comment tag is dropped), lstrip_blocks (spaces and tabs before a block or
// comment tag on its line are dropped), `-` at a tag's edge strips all whitespace on that side,
// `+` turns lstrip/trim off for that edge, newlines normalized to \n and one trailing newline of
// the template dropped (keep_trailing_newline off).
#pragma once

#include <string>
#include <vector>

namespace tandem::text::jinja {

struct Token {
  enum class Kind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Kind kind;
  std::string text;  // Text: the text; String: the decoded literal; Name/Int/Float/Op: as written
  int line = 1;
};

// Throws ParseError (an unterminated tag, comment or string, a character no token starts with).
std::vector<Token> tokenize(const std::string& source);

}  // namespace tandem::text::jinja
