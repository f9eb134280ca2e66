// The vocabulary of a GGUF file (tokenizer.ggml.* keys, spec §2.2): token strings and types, the
// raw bytes each token stands for, the BPE merges, and the special ids.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf_file.h"
#include "text/bpe.h"
#include "text/pre_tokenizer.h"

namespace tandem::text {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t { Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SpecialToken {
  std::string text;
  int32_t id;
  TokenType type;  // Control or UserDefined
};

class Vocabulary {
 public:
  // Reads and checks the tokenizer keys. Throws TokenizerError naming the file and key.
  static Vocabulary from_gguf(const GgufFile& f);
  // Move-only: index_ holds views into tokens_' strings, which a move keeps in place.
  Vocabulary() = default;
  Vocabulary(Vocabulary&&) = default;
  Vocabulary& operator=(Vocabulary&&) = default;
  Vocabulary(const Vocabulary&) = delete;
  Vocabulary& operator=(const Vocabulary&) = delete;

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& token_text(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  TokenType token_type(int32_t id) const { return types_.at(static_cast<size_t>(id)); }
  // The bytes the token produces when decoded (byte-level alphabet undone for normal tokens; the
  // literal text for control/user-defined tokens; empty for unused filler rows).
  std::string_view token_bytes(int32_t id) const {
    return std::string_view(bytes_).substr(byte_off_[id], byte_off_[id + 1] - byte_off_[id]);
  }
  bool valid_id(int64_t id) const { return id >= 0 && id < size(); }
  // Id of a token by its stored string (exact), if any.
  std::optional<int32_t> find(std::string_view text) const;

  PreTokenizerKind pre() const { return pre_; }
  // A pre-token that is itself a vocabulary entry is emitted directly (pre_tokenizer.h).
  bool ignore_merges() const { return ignore_merges_; }
  // Prompts start with bos() (tokenizer.ggml.add_bos_token, else the pre-tokenizer's default);
  // when true, bos() is set.
  bool add_bos() const { return add_bos_; }
  const std::string& pre_name() const { return pre_name_; }
  const BpeMerges& merges() const { return merges_; }
  const std::vector<SpecialToken>& specials() const { return specials_; }

  std::optional<int32_t> bos() const { return bos_; }
  std::optional<int32_t> eos() const { return eos_; }
  std::optional<int32_t> pad() const { return pad_; }
  // End-of-generation: eos plus the end-of-turn tokens that exist in the vocab (<|im_end|>,
  // <|endoftext|>, Granite's <|end_of_text|>), as llama.cpp's EOG set.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_; }

  const std::string& chat_template() const { return chat_template_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  std::string bytes_;               // all token bytes, concatenated
  std::vector<uint32_t> byte_off_;  // size()+1 offsets into bytes_
  std::unordered_map<std::string_view, int32_t> index_;  // views into tokens_
  BpeMerges merges_;
  std::vector<SpecialToken> specials_;
  PreTokenizerKind pre_ = PreTokenizerKind::Qwen2;
  bool ignore_merges_ = false;
  bool add_bos_ = false;
  std::string pre_name_;
  std::optional<int32_t> bos_, eos_, pad_;
  std::vector<int32_t> eog_;
  std::string chat_template_;
};

}  // namespace tandem::text
