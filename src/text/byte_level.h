// GPT-2's byte-level alphabet: every byte is stored in token strings as one printable Unicode
// character (bytes_to_unicode in the original encoder.py): printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100.. in order ("Ġ" = space 0x20, "Ċ" = newline 0x0A).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tandem::text {

// Code point that represents byte b in a token string.
uint32_t byte_to_unicode(uint8_t b);
// Inverse: the byte for code point cp, or -1 if cp is not in the alphabet.
int unicode_to_byte(uint32_t cp);

// UTF-8 token string of each byte (e.g. byte 0x20 -> "Ġ").
const std::array<std::string, 256>& byte_token_strings();

}  // namespace tandem::text
