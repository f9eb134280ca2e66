#include "grammar/vocab_index.h"

#include "grammar/token_trie.h"

namespace tandem::grammar {

namespace {

// Tokens the grammar never matches by their bytes: control and user-defined tokens (their text
// is markup, not output), unused / unknown rows, and anything without bytes.
bool special_type(const text::Vocabulary& v, int32_t id) {
  switch (v.token_type(id)) {
    case text::TokenType::Control:
    case text::TokenType::UserDefined:
    case text::TokenType::Unused:
    case text::TokenType::Unknown: return true;
    default: return v.token_bytes(id).empty() || v.token_bytes(id).size() > 0xFFFF;
  }
}

}  // namespace

VocabIndex::VocabIndex(const text::Tokenizer& tok) : tok_(tok) {
  const auto& v = tok.vocab();
  const int32_t n = v.size();
  special_.assign(static_cast<size_t>(n), 0);
  std::vector<std::pair<int32_t, std::string_view>> normal;
  normal.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    if (special_type(v, id) || v.is_eog(id)) {
      special_[static_cast<size_t>(id)] = 1;
    } else {
      normal.emplace_back(id, v.token_bytes(id));
    }
  }
  trie_ = std::make_unique<TokenTrie>(normal);
}

VocabIndex::~VocabIndex() = default;

int32_t VocabIndex::n_vocab() const { return tok_.n_vocab(); }
bool VocabIndex::is_eog(int32_t id) const { return tok_.vocab().valid_id(id) && tok_.vocab().is_eog(id); }
bool VocabIndex::is_special(int32_t id) const {
  return id < 0 || static_cast<size_t>(id) >= special_.size() || special_[static_cast<size_t>(id)] != 0;
}
std::string_view VocabIndex::token_bytes(int32_t id) const { return tok_.vocab().token_bytes(id); }
size_t VocabIndex::bytes() const { return trie_->bytes() + special_.capacity(); }

}  // namespace tandem::grammar
