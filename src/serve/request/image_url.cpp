#include "serve/request/image_url.h"

#include <cctype>

#include "serve/request/request_error.h"

namespace tandem::serve {

namespace {

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets
  if (c == '/' || c == '_') return 63;
  return -1;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text, const std::string& field) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = base64_value(c);
    if (v < 0 || pad > 0)
      throw RequestError("'" + field + "': invalid base64 at character " + std::to_string(i) +
                            (pad > 0 ? " (data after '=' padding)" : ""),
                        field);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  if (pad > 2 || bits >= 6) throw RequestError("'" + field + "': truncated base64 data", field);
  return out;
}

std::vector<uint8_t> image_url_bytes(std::string_view url, const std::string& field) {
  if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://") || starts_with_ci(url, "file:"))
    throw RequestError("'" + field + "': only inline images are accepted (a data:image/...;base64 URL or bare base64); "
                          "this server fetches nothing, so remote and file URLs are refused",
                      field);
  if (starts_with_ci(url, "data:")) {
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) throw RequestError("'" + field + "': a data: URL without ','", field);
    const std::string_view header = url.substr(5, comma - 5);
    if (!starts_with_ci(header, "image/"))
      throw RequestError("'" + field + "': a data: URL of type '" + std::string(header.substr(0, header.find(';'))) +
                            "' (expected data:image/...;base64,...)",
                        field);
    if (header.size() < 7 || !starts_with_ci(header.substr(header.size() - 7), ";base64"))
      throw RequestError("'" + field + "': the data: URL must be base64-encoded (data:image/...;base64,...)", field);
    return decode_base64(url.substr(comma + 1), field);
  }
  return decode_base64(url, field);  // llama.cpp: any other string is bare base64
}

std::string encode_base64(std::span<const uint8_t> in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  const size_t left = in.size() - i;  // 0, 1 or 2 bytes: 2 or 3 characters and their padding
  if (left > 0) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (left == 2 ? uint32_t{in[i + 1]} << 8 : 0);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += left == 2 ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string image_data_url(std::span<const uint8_t> f) {
  const char* mime = "image/png";
  if (f.size() >= 3 && f[0] == 0xff && f[1] == 0xd8 && f[2] == 0xff) mime = "image/jpeg";
  else if (f.size() >= 4 && f[0] == 'G' && f[1] == 'I' && f[2] == 'F') mime = "image/gif";
  else if (f.size() >= 2 && f[0] == 'B' && f[1] == 'M') mime = "image/bmp";
  return std::string("data:") + mime + ";base64," + encode_base64(f);
}

}  // namespace tandem::serve
