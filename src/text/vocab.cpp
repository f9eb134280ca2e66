#include "text/vocab.h"

#include <algorithm>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace tandem::text {
namespace {

// Undo the byte-level alphabet of a normal token. Characters outside the alphabet (a malformed or
// non-byte-level vocabulary) are kept as their UTF-8 bytes rather than rejected.
void append_token_bytes(std::string& out, std::string_view tok) {
  size_t i = 0;
  while (i < tok.size()) {
    const size_t start = i;
    const uint32_t cp = next_code_point(tok, i);
    const int b = unicode_to_byte(cp);
    if (b >= 0) out += static_cast<char>(b);
    else out.append(tok.substr(start, i - start));
  }
}

}  // namespace

Vocabulary Vocabulary::from_gguf(const GgufFile& f) {
  Vocabulary v;
  v.source_ = f.path();
  auto fail = [&](const std::string& what) -> TokenizerError {
    return TokenizerError(f.path() + ": " + what);
  };
  try {
    const auto model = f.get_string("tokenizer.ggml.model");
    if (!model) throw fail("no tokenizer in this file (key tokenizer.ggml.model is missing)");
    if (*model != "gpt2")
      throw fail("tokenizer.ggml.model is '" + *model + "'; Tandem implements byte-level BPE ('gpt2') only");
    v.pre_name_ = f.get_string("tokenizer.ggml.pre").value_or("default");
    PreTokenizerRules rules;
    if (!pre_tokenizer_rules(v.pre_name_, rules))
      throw fail("tokenizer.ggml.pre is '" + v.pre_name_ + "'; supported pre-tokenizers: " +
                 supported_pre_tokenizer_names());
    v.pre_ = rules.kind;
    v.ignore_merges_ = rules.ignore_merges;
    v.add_bos_ = rules.add_bos;

    const auto* tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty()) throw fail("key tokenizer.ggml.tokens is missing or empty");
    if (tokens->size() > static_cast<size_t>(INT32_MAX) - 1) throw fail("tokenizer.ggml.tokens is too large");
    v.tokens_ = *tokens;
    const size_t n = v.tokens_.size();

    v.types_.assign(n, TokenType::Normal);
    if (const auto* types = f.get_int_array("tokenizer.ggml.token_type")) {
      if (types->size() != n)
        throw fail("tokenizer.ggml.token_type has " + std::to_string(types->size()) + " entries, tokens has " +
                   std::to_string(n));
      for (size_t i = 0; i < n; ++i) {
        const int64_t t = (*types)[i];
        if (t < 0 || t > 6) throw fail("tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(t) + " is not a token type");
        v.types_[i] = static_cast<TokenType>(t);
      }
    }

    v.index_.reserve(n);
    v.byte_off_.reserve(n + 1);
    for (size_t i = 0; i < n; ++i) {
      const auto id = static_cast<int32_t>(i);
      v.index_.emplace(std::string_view(v.tokens_[i]), id);  // first occurrence wins
      v.byte_off_.push_back(static_cast<uint32_t>(v.bytes_.size()));
      switch (v.types_[i]) {
        case TokenType::Control:
        case TokenType::UserDefined:
          v.bytes_ += v.tokens_[i];
          if (!v.tokens_[i].empty()) v.specials_.push_back({v.tokens_[i], id, v.types_[i]});
          break;
        case TokenType::Unused:
        case TokenType::Undefined:
          break;
        default:
          append_token_bytes(v.bytes_, v.tokens_[i]);
          break;
      }
      if (v.bytes_.size() > UINT32_MAX) throw fail("token texts are too large");
    }
    v.byte_off_.push_back(static_cast<uint32_t>(v.bytes_.size()));

    // Byte tokens: every byte needs a token, otherwise BPE has nothing to start from.
    const auto& alphabet = byte_token_strings();
    for (int b = 0; b < 256; ++b) {
      const auto id = v.find(alphabet[b]);
      if (!id) throw fail("byte-level vocabulary lacks the token for byte 0x" + [&] {
        const char* hex = "0123456789ABCDEF";
        return std::string{hex[b >> 4], hex[b & 15]};
      }() + " ('" + alphabet[b] + "')");
      v.merges_.set_byte_token(static_cast<uint8_t>(b), *id);
    }

    if (const auto* merges = f.get_string_array("tokenizer.ggml.merges")) {
      v.merges_.reserve(merges->size());
      std::string joined;
      for (size_t r = 0; r < merges->size(); ++r) {
        const std::string& m = (*merges)[r];
        // Token strings are in the byte-level alphabet and never contain a plain space; search
        // from 1 so a merge whose left side were a literal space would still split sensibly.
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos)
          throw fail("tokenizer.ggml.merges[" + std::to_string(r) + "] = '" + m + "' is not 'left right'");
        const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
        const auto l = v.find(left), rt = v.find(right);
        joined.assign(left);
        joined.append(right);
        const auto res = v.find(joined);
        // A merge whose parts or result are not tokens can never fire in the reference either
        // (its output would be the unknown token); skip it.
        if (!l || !rt || !res) continue;
        v.merges_.add(*l, *rt, *res, static_cast<int32_t>(r));
      }
    }

    auto opt_id = [&](const char* key) -> std::optional<int32_t> {
      const auto x = f.get_uint(key);
      if (!x) return std::nullopt;
      if (*x >= n) throw fail(std::string(key) + " = " + std::to_string(*x) + " is outside the vocabulary (" + std::to_string(n) + " tokens)");
      return static_cast<int32_t>(*x);
    };
    v.bos_ = opt_id("tokenizer.ggml.bos_token_id");
    v.eos_ = opt_id("tokenizer.ggml.eos_token_id");
    v.pad_ = opt_id("tokenizer.ggml.padding_token_id");
    // The pre-tokenizer's default, overridden by the file's key when present (llama.cpp's order).
    if (const auto add = f.get_bool("tokenizer.ggml.add_bos_token")) v.add_bos_ = *add;
    if (v.add_bos_ && !v.bos_)
      throw fail("the tokenizer adds a BOS token (tokenizer.ggml.pre '" + v.pre_name_ +
                 "' or tokenizer.ggml.add_bos_token) but tokenizer.ggml.bos_token_id is missing");
    if (v.eos_) v.eog_.push_back(*v.eos_);
    for (const char* t : {"<|im_end|>", "<|endoftext|>", "<|end_of_text|>"}) {
      const auto id = v.find(t);
      if (id && std::find(v.eog_.begin(), v.eog_.end(), *id) == v.eog_.end()) v.eog_.push_back(*id);
    }
    v.chat_template_ = f.get_string("tokenizer.chat_template").value_or("");
  } catch (const GgufError& e) {
    throw TokenizerError(e.what());
  }
  return v;
}

std::optional<int32_t> Vocabulary::find(std::string_view text) const {
  const auto it = index_.find(text);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool Vocabulary::is_eog(int32_t id) const {
  return std::find(eog_.begin(), eog_.end(), id) != eog_.end();
}

}  // namespace tandem::text
