// Test helper (header-only, for src/grammar/*_test.cpp): a byte-level BPE tokenizer with the
// generator's built-in vocabulary plus tokens that exercise the grammar: multi-byte UTF-8
// characters and their byte prefixes, tokens mixing ASCII with a partial character, JSON
// punctuation runs, random concatenations (lengths not a multiple of anything), a few unused
// rows without bytes.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/vocab_index.h"
#include "model/qwen35/qwen35_generator.h"
#include "text/test_vocab.h"

namespace tandem::grammar::testing {

class TestVocabBuilder {
 public:
  TestVocabBuilder() : v_(builtin_qwen35_vocab()) {
    for (size_t i = 0; i < v_.tokens.size(); ++i) ids_[v_.tokens[i]] = static_cast<int32_t>(i);
    const auto img = text::testing::vocab_image(v_);
    const auto tok = text::Tokenizer::from_gguf(*img->file);
    for (int32_t id = 0; id < 256; ++id) byte_text_[static_cast<uint8_t>(tok->vocab().token_bytes(id)[0])] = v_.tokens[static_cast<size_t>(id)];
  }
  // Adds the token for these bytes and every prefix of it, each by one merge (prefix, byte).
  void add_bytes(const std::string& bytes) {
    std::string piece = byte_text_[static_cast<uint8_t>(bytes[0])];
    for (size_t i = 1; i < bytes.size(); ++i) {
      const std::string& b = byte_text_[static_cast<uint8_t>(bytes[i])];
      add_merge(piece, b);
      piece += b;
    }
  }
  void add_random(uint64_t seed, int n) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> normal;
    for (size_t i = 0; i < v_.tokens.size(); ++i)
      if (v_.token_types[i] == 1) normal.push_back(v_.tokens[i]);
    for (int k = 0; k < n; ++k) {
      const std::string& a = normal[rng() % normal.size()];
      const std::string& b = normal[rng() % normal.size()];
      if (add_merge(a, b)) normal.push_back(a + b);
    }
  }
  std::unique_ptr<text::Tokenizer> build(int n_pad = 4) {
    v_.pad_to(v_.size() + n_pad);
    return text::Tokenizer::from_gguf(*text::testing::vocab_image(v_)->file);
  }

 private:
  bool add_merge(const std::string& a, const std::string& b) {
    if (ids_.count(a + b)) return false;
    ids_[a + b] = static_cast<int32_t>(v_.tokens.size());
    v_.tokens.push_back(a + b);
    v_.token_types.push_back(1);
    v_.merges.push_back(a + " " + b);
    return true;
  }
  Qwen35Vocab v_;
  std::map<std::string, int32_t> ids_;
  std::string byte_text_[256];
};

// The tokenizer and its index, kept alive together.
struct TestVocab {
  std::unique_ptr<text::Tokenizer> tok;
  std::shared_ptr<const VocabIndex> index;
};

inline TestVocab make_test_vocab(uint64_t seed = 7, int n_random = 800) {
  TestVocabBuilder b;
  for (const char* s : {"\xC3\xA9", "caf\xC3\xA9", "\xE4\xB8\xAD\xE6\x96\x87", "\xE6\x97\xA5\xE6\x9C\xAC", "a\xC3",
                        "\xF0\x9F\x98\x80", "\":\"", "{\"", "\"}", "\",\"", "action", "tap", "type", "text", "index",
                        "back", "home", "abc", "12", "123", " the", "\\n", "\xE3\x81\x82\xE3\x81\x84"})
    b.add_bytes(s);
  b.add_random(seed, n_random);
  TestVocab v;
  v.tok = b.build();
  v.index = std::make_shared<VocabIndex>(*v.tok);
  return v;
}

// The suites' vocabulary (make_test_vocab's defaults), built once per process.
inline const TestVocab& vocab() {
  static const TestVocab v = make_test_vocab();
  return v;
}

}  // namespace tandem::grammar::testing
