// Finds control / user-defined tokens in raw text before BPE runs.
//
// At each position the longest special token that starts there wins, scanning left to right (the
// reference's DictionarySplitter does the same with a trie). Matching happens on raw bytes before
// UTF-8 decoding; special token texts are valid UTF-8, and a WHATWG decoder never merges an ASCII
// byte into a broken sequence, so this splits exactly where the reference splits decoded text.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/vocab.h"

namespace tandem::text {

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher() = default;
  explicit SpecialTokenMatcher(const std::vector<SpecialToken>& specials);

  struct Match {
    size_t pos = 0;   // byte offset of the match
    size_t len = 0;   // 0: no match
    int32_t id = -1;
  };
  // First match at or after `from`. include_control = false skips Control tokens (user-defined
  // ones like <think> are always recognized, as in llama.cpp).
  Match find(std::string_view text, size_t from, bool include_control) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<SpecialToken> tokens_;           // sorted by text length, longest first
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_, longest first
};

}  // namespace tandem::text
