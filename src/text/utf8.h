// UTF-8 decoding and encoding as the reference tokenizer sees text.
//
// The Hugging Face reference receives JavaScript strings, i.e. bytes already decoded by a WHATWG
// TextDecoder: every ill-formed subsequence becomes one U+FFFD ("maximal subpart" rule, Unicode
// §3.9 / WHATWG Encoding). decode_utf8() reproduces that rule exactly so that broken input gets the
// same ids as the reference, and it never reads past the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::text {

constexpr uint32_t kReplacementChar = 0xFFFD;

// Decodes one code point at s[i]; advances i by the bytes consumed (>= 1). Ill-formed input yields
// kReplacementChar and consumes the maximal subpart (1..3 bytes).
uint32_t next_code_point(std::string_view s, size_t& i);

// Appends the code points of s (with replacement) to out (not cleared).
void decode_utf8(std::string_view s, std::vector<uint32_t>& out);

// Appends the UTF-8 encoding of cp (surrogates and values > 0x10FFFF are written as U+FFFD).
void append_utf8(std::string& out, uint32_t cp);
std::string encode_utf8(const std::vector<uint32_t>& cps);

// True if s is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Length of a trailing prefix of a well-formed multi-byte sequence that may still be completed by
// later bytes (0..3). Streaming decoders hold these bytes back instead of printing half a character.
size_t incomplete_utf8_tail(std::string_view s);

}  // namespace tandem::text
