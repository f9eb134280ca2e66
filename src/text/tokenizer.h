// Text <-> token ids for a qwen35 GGUF: the pipeline of the Hugging Face tokenizer it was made from.
//
//   encode: [BOS when asked and the vocabulary adds one] special tokens split out first -> per
//           section: UTF-8 decode (U+FFFD for broken bytes) -> NFC -> pre-tokenizer split
//           (pre_tokenizer.h) -> bytes -> the piece's own token if ignore_merges and it has one,
//           else BPE merges (bpe.h)
//   decode: each id's bytes concatenated (byte-level alphabet undone); StreamDecoder for output
//           that arrives token by token.
//
// A Tokenizer is immutable after construction and safe to use from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "text/special_tokens.h"
#include "text/vocab.h"

namespace tandem::text {

struct TokenizerOptions {
  // Apply NFC to text sections as the reference (tokenizer.json "normalizer": NFC) does. GGUF
  // files do not record the normalizer; llama.cpp does not normalize.
  bool nfc = true;
};

struct EncodeOptions {
  // Recognize control tokens (<|im_start|> ...) in the text. User-defined tokens (<think>) are
  // always recognized.
  bool parse_special = true;
  // Prepend the BOS token when the vocabulary adds one (Vocabulary::add_bos(): LFM2 files yes,
  // Qwen and Granite files no), as llama.cpp's add_special. Off by default: callers that build a
  // whole prompt ask for it (tokenize_chat() does).
  bool add_special = false;
};

class Tokenizer {
 public:
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& f, TokenizerOptions opt = {});
  static std::unique_ptr<Tokenizer> from_file(const std::string& gguf_path, TokenizerOptions opt = {});
  explicit Tokenizer(Vocabulary vocab, TokenizerOptions opt = {});

  const Vocabulary& vocab() const { return vocab_; }
  int32_t n_vocab() const { return vocab_.size(); }
  // True when prompts start with vocab().bos() (see Vocabulary::add_bos()).
  bool add_bos() const { return vocab_.add_bos(); }

  std::vector<int32_t> encode(std::string_view text, EncodeOptions opt = {}) const;
  // Appends ids to out. With offsets, appends for each id the byte offset in text where it starts
  // (exact for special tokens and unnormalized sections; tokens of a section NFC changed all get
  // the section's start; an added BOS gets 0).
  void encode(std::string_view text, std::vector<int32_t>& out, EncodeOptions opt = {},
              std::vector<uint32_t>* offsets = nullptr) const;

  // Concatenated bytes of the ids. render_special = false drops control tokens. Invalid ids throw
  // std::out_of_range.
  std::string decode(std::span<const int32_t> ids, bool render_special = true) const;
  void append_token(std::string& out, int32_t id, bool render_special = true) const;

 private:
  void encode_section(std::string_view section, size_t base, std::vector<int32_t>& out,
                      std::vector<uint32_t>* offsets) const;

  Vocabulary vocab_;
  TokenizerOptions opt_;
  SpecialTokenMatcher specials_;
};

// Turns a stream of token ids into printable UTF-8: bytes of a character split across tokens are
// held back until the character is complete (or until flush()).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool render_special = true) : tok_(tok), special_(render_special) {}
  // Returns the text that became complete with this token (a view into an internal buffer, valid
  // until the next call).
  std::string_view push(int32_t id);
  // Returns what is still held back (an incomplete or broken trailing sequence) and resets.
  std::string_view flush();
  void reset() { pending_.clear(); }

 private:
  const Tokenizer& tok_;
  bool special_;
  std::string pending_;
  std::string out_;
};

}  // namespace tandem::text
