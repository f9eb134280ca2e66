// What a grammar needs to know about a model's vocabulary, built once per loaded model: the
// bytes of every normal token in a token trie (masks are trie walks), which ids are
// end-of-generation, which are special (only reachable through token terminals `<[id]>`), and
// the tokenizer (forced text is tokenized canonically).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"

namespace tandem::grammar {

class TokenTrie;  // grammar/token_trie.h

class VocabIndex {
 public:
  // The tokenizer must outlive the index.
  explicit VocabIndex(const text::Tokenizer& tok);
  ~VocabIndex();
  VocabIndex(const VocabIndex&) = delete;
  VocabIndex& operator=(const VocabIndex&) = delete;

  int32_t n_vocab() const;
  const text::Tokenizer& tokenizer() const { return tok_; }
  const TokenTrie& trie() const { return *trie_; }
  bool is_eog(int32_t id) const;
  // Control / user-defined tokens and unused rows: never matched by text, only by token terminals.
  bool is_special(int32_t id) const;
  std::string_view token_bytes(int32_t id) const;
  size_t bytes() const;

 private:
  const text::Tokenizer& tok_;
  std::unique_ptr<TokenTrie> trie_;
  std::vector<uint8_t> special_;
};

}  // namespace tandem::grammar
