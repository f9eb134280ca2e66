// Test support: reading the golden data llama.cpp wrote (../shared/golden*/): a token list as a
// JSON array of integers, and raw little-endian float32 logits. Shared by the golden-logits tests
// of every architecture and the image-rows test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

namespace tandem::golden {

// "[1, 2, 3]" (any whitespace) -> {1, 2, 3}; stops at the first thing that is not a number.
inline std::vector<int32_t> read_tokens(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::vector<int32_t> v;
  char c;
  int64_t x;
  while (f >> c) {
    if (c == '[' || c == ',' || c == ']') continue;
    f.putback(c);
    if (!(f >> x)) break;
    v.push_back(static_cast<int32_t>(x));
  }
  return v;
}

// The whole file as floats (a trailing partial float is dropped).
inline std::vector<float> read_f32(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<float> v(std::filesystem::file_size(p) / sizeof(float));
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

}  // namespace tandem::golden
