// JSON Schema `pattern` as GBNF over the JSON text of a string's content (between the quotes).
// A regex matches decoded characters, the grammar matches their JSON encoding, so every atom is
// emitted as the set of its characters' canonical encodings: raw UTF-8 for ordinary characters,
// `\"` `\\` `\n` ... `\u00XX` for the ones JSON requires escaped. Semantics follow ECMA-262 (what
// JSON Schema specifies): \d is [0-9], \w is [A-Za-z0-9_], `.` is anything but line
// terminators. Unlike llama.cpp, an unanchored pattern is accepted with JSON Schema's search
// semantics (any text may come before / after it), and \d \w \s are supported.
//
// Supported: literals, escapes, classes [..] / [^..] with ranges and shorthands, `.`, groups
// ( ) and (?: ), alternation, * + ? {m} {m,} {m,n} (lazy suffix `?` accepted: same language),
// ^ at the start and $ at the end of a top-level alternative. Anything else (backreferences,
// lookaround, \b, flags, named groups, possessive quantifiers, \p{..}) is a GrammarError.
#pragma once

#include <string>
#include <string_view>

namespace tandem::grammar {

// The GBNF expression for the string content; `char_rule` names the rule of one JSON string
// character (used for the free text around an unanchored pattern). Throws GrammarError with a
// message that names the offending construct and its offset in the pattern.
std::string pattern_to_gbnf(std::string_view pattern, const std::string& char_rule);

}  // namespace tandem::grammar
