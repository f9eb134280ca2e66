// llama.cpp's GBNF dialect (src/llama-grammar.cpp, spec/constrained.md §2.1), parsed into the
// same rule/element form llama.cpp uses: each rule is a flat list of elements, alternatives
// separated by Alt and closed by End; groups and repetitions become helper rules exactly as
// llama.cpp rewrites them (S{m,n} -> S..S S'(n-m), S' ::= S S'' | ...).
//
// Deliberate differences from llama.cpp (all make the result stricter or bounded, never looser
// on valid grammars):
//   - left recursion is detected with full nullability (a rule that can derive "" through other
//     rules counts as empty), so `root ::= ("a"*)*` is rejected instead of looping at match time;
//   - nesting of parentheses is capped (GrammarLimits-independent, kMaxNesting), so hostile input
//     cannot overflow the C++ stack;
//   - a NUL byte in the text is an error (llama.cpp would silently stop at it);
//   - a token id outside the vocabulary is an error.
// Repetition limits (GrammarLimits::max_repetition, 2000 as llama.cpp's
// MAX_REPETITION_THRESHOLD): a minimum above it is an error ("number of repetitions exceeds sane
// defaults"); a maximum above it silently means unbounded, as in llama.cpp; a repeated group that
// expands into several helper rules errors when rules x repetitions reaches the threshold.
// max_rules and max_elements bound the rewritten result in any case.
// Every error is a GrammarError "GBNF parse error at L:C (byte B): ...".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_limits.h"

namespace tandem::grammar {

class VocabIndex;

enum class ElemType : uint8_t {
  End,         // end of a rule
  Alt,         // start of another alternative
  RuleRef,     // value: rule id
  Char,        // value: code point; starts a class (followed by CharAlt / CharRngUpper)
  CharNot,     // value: code point; starts a negated class
  CharRngUpper,  // value: upper bound of the range started by the previous Char/CharAlt
  CharAlt,     // value: another code point of the class
  CharAny,     // `.`
  Token,       // value: token id (`<[id]>` or `<text>`)
  TokenNot,    // value: token id (`!<...>`): any single token but this one
};

struct Element {
  ElemType type;
  uint32_t value;
};

struct ParsedGrammar {
  std::vector<std::vector<Element>> rules;  // by rule id
  std::vector<std::string> names;           // by rule id (helper rules: "name_N")
  uint32_t root = 0;
};

inline constexpr int kMaxNesting = 256;  // parentheses

// vocab may be null: then `<text>` terminals are an error ("no vocabulary"), `<[id]>` unchecked.
ParsedGrammar parse_gbnf(std::string_view src, const GrammarLimits& limits, const VocabIndex* vocab);

// Names of the rules in llama.cpp's print form (debugging, tests).
std::string print_gbnf(const ParsedGrammar& g);

}  // namespace tandem::grammar
