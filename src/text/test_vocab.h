// Test helper (header-only, used by the *_test.cpp files here): a Tokenizer over the generator's
// built-in vocabulary, or over any Qwen35Vocab, without writing a file.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/qwen35/qwen35_generator.h"
#include "text/tokenizer.h"

namespace tandem::text::testing {

struct VocabImage {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
};

// add_bos: write tokenizer.ggml.add_bos_token (unset: the key is absent, the pre-tokenizer decides).
inline std::unique_ptr<VocabImage> vocab_image(const Qwen35Vocab& v, std::optional<bool> add_bos = std::nullopt) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen35");
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", v.pre);
  w.set_array_string("tokenizer.ggml.tokens", v.tokens);
  w.set_array_i32("tokenizer.ggml.token_type", v.token_types);
  w.set_array_string("tokenizer.ggml.merges", v.merges);
  if (v.bos_id) w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*v.bos_id));
  if (v.eos_id) w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*v.eos_id));
  if (add_bos) w.set_bool("tokenizer.ggml.add_bos_token", *add_bos);
  if (!v.chat_template.empty()) w.set_string("tokenizer.chat_template", v.chat_template);
  auto img = std::make_unique<VocabImage>();
  img->bytes = w.to_bytes();
  img->file = GgufFile::from_memory(img->bytes.data(), img->bytes.size(), "test-vocab.gguf");
  return img;
}

inline std::unique_ptr<Tokenizer> builtin_tokenizer(const std::string& pre = "qwen2") {
  Qwen35Vocab v = builtin_qwen35_vocab();
  v.pre = pre;
  return Tokenizer::from_gguf(*vocab_image(v)->file);
}

}  // namespace tandem::text::testing
