#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "text/test_vocab.h"
#include "text/utf8.h"

namespace tandem::text {
namespace {

using testing::builtin_tokenizer;
using testing::vocab_image;

TEST(Tokenizer, RoundTripsValidText) {
  const auto tok = builtin_tokenizer();
  for (const char* s : {"Hello world", "the quick brown fox", "  spaces  and\ttabs\n\n", "数字 123 和 emoji 😀",
                        "I'm here, they'll go", "e\xCC\x81", ""}) {
    const auto ids = tok->encode(s);
    // NFC may change text; these are NFC already except the decomposed é, which becomes é.
    if (std::string(s) == "e\xCC\x81") EXPECT_EQ(tok->decode(ids), "\xC3\xA9");
    else EXPECT_EQ(tok->decode(ids), s);
  }
}

TEST(Tokenizer, MergesApply) {
  const auto tok = builtin_tokenizer();
  const auto& v = tok->vocab();
  // Every id of a multi-letter English word is a merged token, not single bytes.
  const auto ids = tok->encode("the");
  EXPECT_LT(ids.size(), 3u);
  EXPECT_EQ(tok->decode(ids), "the");
  EXPECT_EQ(v.token_bytes(*v.find("\xC4\xA0")), " ");  // "Ġ" is the space byte
}

TEST(Tokenizer, SpecialTokens) {
  const auto tok = builtin_tokenizer();
  const auto& v = tok->vocab();
  const int32_t im_start = *v.find("<|im_start|>"), im_end = *v.find("<|im_end|>"), think = *v.find("<think>");
  auto ids = tok->encode("<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(ids.front(), im_start);
  EXPECT_EQ(ids.back(), im_end);
  // Without special parsing control tokens are plain text; user-defined ones still match.
  ids = tok->encode("<|im_start|><think>", EncodeOptions{false});
  EXPECT_NE(ids.front(), im_start);
  EXPECT_EQ(ids.back(), think);
  EXPECT_EQ(tok->decode(ids), "<|im_start|><think>");
  // Longest match, partial markers are text.
  ids = tok->encode("<|im_start<|im_end|>>");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 1);
  EXPECT_EQ(tok->decode(ids), "<|im_start<|im_end|>>");
  EXPECT_EQ(tok->decode(std::vector<int32_t>{im_start, im_end}, /*render_special=*/false), "");
  EXPECT_TRUE(v.is_eog(im_end));
}

TEST(Tokenizer, BrokenUtf8BecomesReplacementCharacters) {
  const auto tok = builtin_tokenizer();
  const auto ids = tok->encode("a\xE4\xBD" "b\xFF");
  EXPECT_EQ(tok->decode(ids), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
  std::mt19937 rng(11);
  for (int it = 0; it < 500; ++it) {
    std::string s(rng() % 40, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    const auto out = tok->encode(s);
    if (is_valid_utf8(s)) {
      std::vector<uint32_t> cps;
      decode_utf8(s, cps);
      bool low = true;
      for (uint32_t cp : cps) low &= cp < 0x300;
      if (low) {
        EXPECT_EQ(tok->decode(out), s);
      }
    }
  }
}

TEST(Tokenizer, OffsetsPointAtTokenStarts) {
  const auto tok = builtin_tokenizer();
  const std::string text = "<|im_start|>user\nHello there<|im_end|>\n";
  std::vector<int32_t> ids;
  std::vector<uint32_t> offs;
  tok->encode(text, ids, {}, &offs);
  ASSERT_EQ(ids.size(), offs.size());
  std::string rebuilt;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(offs[i], rebuilt.size());
    tok->append_token(rebuilt, ids[i]);
  }
  EXPECT_EQ(rebuilt, text);
}

TEST(Tokenizer, StreamDecoderHoldsSplitCharacters) {
  const auto tok = builtin_tokenizer();
  const auto ids = tok->encode("你好😀!");  // no merges for these: one token per byte
  StreamDecoder sd(*tok);
  std::string out;
  for (int32_t id : ids) {
    const std::string_view piece = sd.push(id);
    EXPECT_TRUE(is_valid_utf8(piece));
    out += piece;
  }
  out += sd.flush();
  EXPECT_EQ(out, "你好😀!");
  // A broken sequence is released at flush.
  StreamDecoder sd2(*tok);
  EXPECT_EQ(sd2.push(*tok->vocab().find("\xC3\xA4")), "");  // "ä" in the byte alphabet = byte 0xE4
  EXPECT_EQ(sd2.flush(), "\xE4");
}

TEST(Tokenizer, BadIdsAndMissingVocabularyAreErrors) {
  const auto tok = builtin_tokenizer();
  EXPECT_THROW(tok->decode(std::vector<int32_t>{-1}), std::out_of_range);
  EXPECT_THROW(tok->decode(std::vector<int32_t>{tok->n_vocab()}), std::out_of_range);

  GgufWriter w;
  w.set_string("general.architecture", "qwen35");
  const auto bytes = w.to_bytes();
  const auto f = GgufFile::from_memory(bytes.data(), bytes.size(), "empty.gguf");
  try {
    Tokenizer::from_gguf(*f);
    FAIL();
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model"), std::string::npos) << e.what();
  }

  Qwen35Vocab v = builtin_qwen35_vocab();
  v.pre = "llama3";
  EXPECT_THROW(Tokenizer::from_gguf(*vocab_image(v)->file), TokenizerError);
  v = builtin_qwen35_vocab();
  v.tokens[32] = "not-the-byte";  // byte token for 'A' (0x41) missing
  EXPECT_THROW(Tokenizer::from_gguf(*vocab_image(v)->file), TokenizerError);
}

}  // namespace
}  // namespace tandem::text
