#include "text/tokenizer.h"

#include <gtest/gtest.h>

#include <optional>
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
  v.pre = "gpt-4o";
  try {
    Tokenizer::from_gguf(*vocab_image(v)->file);
    FAIL();
  } catch (const TokenizerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tokenizer.ggml.pre is 'gpt-4o'"), std::string::npos) << what;
    for (const char* name : {"qwen2", "qwen35", "llama3", "llama-bpe", "lfm2", "dbrx"})
      EXPECT_NE(what.find(name), std::string::npos) << what;
  }
  v = builtin_qwen35_vocab();
  v.tokens[32] = "not-the-byte";  // byte token for 'A' (0x41) missing
  EXPECT_THROW(Tokenizer::from_gguf(*vocab_image(v)->file), TokenizerError);
}

// A vocabulary whose "xyz" and "Ġxyz" are tokens no merge reaches.
Qwen35Vocab vocab_with_unmerged_words(const std::string& pre) {
  Qwen35Vocab v = builtin_qwen35_vocab();
  v.pre = pre;
  for (const char* t : {"xyz", "\xC4\xA0xyz"}) {
    v.tokens.push_back(t);
    v.token_types.push_back(1);
  }
  return v;
}

TEST(Tokenizer, IgnoreMergesEmitsWholePiecesThatAreTokens) {
  const auto lfm2 = Tokenizer::from_gguf(*vocab_image(vocab_with_unmerged_words("lfm2"))->file);
  const auto dbrx = Tokenizer::from_gguf(*vocab_image(vocab_with_unmerged_words("dbrx"))->file);
  const int32_t xyz = *lfm2->vocab().find("xyz"), sp_xyz = *lfm2->vocab().find("\xC4\xA0xyz");
  EXPECT_TRUE(lfm2->vocab().ignore_merges());
  EXPECT_FALSE(dbrx->vocab().ignore_merges());
  EXPECT_EQ(lfm2->encode("xyz xyz"), (std::vector<int32_t>{xyz, sp_xyz}));
  // dbrx runs the merges: no merge builds "xyz", so it stays three byte tokens (twice).
  const auto merged = dbrx->encode("xyz xyz");
  EXPECT_GT(merged.size(), 2u);
  EXPECT_EQ(dbrx->decode(merged), "xyz xyz");
  // Pieces that are not whole tokens still merge, identically under both.
  EXPECT_EQ(lfm2->encode("xyzw the"), dbrx->encode("xyzw the"));
  // Offsets stay exact for the whole-piece tokens.
  std::vector<int32_t> ids;
  std::vector<uint32_t> offs;
  lfm2->encode("a xyz", ids, {}, &offs);
  ASSERT_EQ(ids.back(), sp_xyz);
  EXPECT_EQ(offs.back(), 1u);
}

TEST(Tokenizer, BosRules) {
  const int32_t eot = *builtin_qwen35_vocab().find("<|endoftext|>");  // the built-in vocabulary's bos
  auto make = [](const std::string& pre, std::optional<bool> key) {
    return Tokenizer::from_gguf(*vocab_image(vocab_with_unmerged_words(pre), key)->file);
  };
  // lfm2 (and the llama3 family) add BOS unless the file says otherwise; dbrx and qwen only when it says so.
  EXPECT_TRUE(make("lfm2", std::nullopt)->add_bos());
  EXPECT_TRUE(make("llama-bpe", std::nullopt)->add_bos());
  EXPECT_FALSE(make("lfm2", false)->add_bos());
  EXPECT_FALSE(make("dbrx", std::nullopt)->add_bos());
  EXPECT_TRUE(make("dbrx", true)->add_bos());
  EXPECT_FALSE(make("qwen2", std::nullopt)->add_bos());
  EXPECT_FALSE(make("qwen2", false)->add_bos());

  const auto lfm2 = make("lfm2", std::nullopt);
  EncodeOptions with_bos;
  with_bos.add_special = true;
  const auto ids = lfm2->encode("xyz", with_bos);
  EXPECT_EQ(ids, (std::vector<int32_t>{eot, *lfm2->vocab().find("xyz")}));
  EXPECT_EQ(lfm2->encode("xyz").size(), 1u);                       // add_special is off by default
  EXPECT_NE(make("dbrx", std::nullopt)->encode("xyz", with_bos).front(), eot);

  // A tokenizer that must add BOS needs its id.
  Qwen35Vocab v = vocab_with_unmerged_words("lfm2");
  v.bos_id.reset();
  try {
    Tokenizer::from_gguf(*vocab_image(v)->file);
    FAIL();
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("bos_token_id"), std::string::npos) << e.what();
  }
  v.pre = "dbrx";
  EXPECT_NO_THROW(Tokenizer::from_gguf(*vocab_image(v)->file));
}

TEST(Tokenizer, GraniteEndOfTextIsEndOfGeneration) {
  Qwen35Vocab v = vocab_with_unmerged_words("dbrx");
  v.tokens.push_back("<|end_of_text|>");
  v.token_types.push_back(3);
  const auto tok = Tokenizer::from_gguf(*vocab_image(v)->file);
  EXPECT_TRUE(tok->vocab().is_eog(*tok->vocab().find("<|end_of_text|>")));
}

}  // namespace
}  // namespace tandem::text
