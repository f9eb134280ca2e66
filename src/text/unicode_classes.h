// Unicode character classes used by the pre-tokenizer regexes (spec §2.2).
//
// Categories come from ICU (u_charType), i.e. the real Unicode General_Category, not an ASCII
// approximation. "Whitespace" is the JavaScript \s set, because the reference tokenizer applies
// the split regex with a JavaScript RegExp: WhiteSpace (TAB VT FF SP NBSP ZWNBSP/BOM + every Zs)
// plus LineTerminator (LF CR U+2028 U+2029). Note that U+0085 is *not* in it (unlike Python/Rust).
//
// Lookups for ASCII and the BMP go through a table built once, so the hot loop does not call ICU.
#pragma once

#include <cstdint>

namespace tandem::text {

enum CodePointFlags : uint8_t {
  kLetter = 1 << 0,      // \p{L}
  kMark = 1 << 1,        // \p{M}
  kNumber = 1 << 2,      // \p{N}
  kWhitespace = 1 << 3,  // JavaScript \s
};

// Flags of one code point (0 for unassigned / other categories).
uint8_t code_point_flags(uint32_t cp);

inline bool is_letter(uint32_t cp) { return code_point_flags(cp) & kLetter; }
inline bool is_mark(uint32_t cp) { return code_point_flags(cp) & kMark; }
inline bool is_number(uint32_t cp) { return code_point_flags(cp) & kNumber; }
inline bool is_whitespace(uint32_t cp) { return code_point_flags(cp) & kWhitespace; }

}  // namespace tandem::text
