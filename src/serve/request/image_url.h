// Images as clients send them (issue 26), OpenAI's image_url parts and llama.cpp's
// multimodal_data alike: a data: URL (data:image/<any>;base64,...) or bare base64. Remote http(s)
// and file URLs are refused: the server fetches nothing. Every failure is a RequestError naming the
// field. The bytes are decoded as images when the prompt is assembled (prompt_assembly.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::serve {

// The bytes of an image URL (a data: URL or bare base64). Refused: a remote or file URL, another
// data: type, invalid base64.
std::vector<uint8_t> image_url_bytes(std::string_view url, const std::string& field);
std::vector<uint8_t> decode_base64(std::string_view text, const std::string& field);

// Standard base64 with '=' padding.
std::string encode_base64(std::span<const uint8_t> bytes);
// A data: URL of an image file (what a client sends, and what the dry run writes into a trace's
// bodies): its type from the file's first bytes (JPEG, GIF, BMP, else PNG).
std::string image_data_url(std::span<const uint8_t> file);

}  // namespace tandem::serve
