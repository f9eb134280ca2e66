#include "text/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "text/utf8.h"

namespace tandem::text {
namespace {

std::vector<std::string> split(std::string_view s, PreTokenizerKind k = PreTokenizerKind::Qwen2) {
  std::vector<uint32_t> cps;
  decode_utf8(s, cps);
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  pre_tokenize(k, cps, pieces);
  std::vector<std::string> out;
  uint32_t expect = 0;
  for (auto [b, e] : pieces) {
    EXPECT_EQ(b, expect);  // contiguous cover
    expect = e;
    out.push_back(encode_utf8(std::vector<uint32_t>(cps.begin() + b, cps.begin() + e)));
  }
  EXPECT_EQ(expect, cps.size());
  return out;
}

using V = std::vector<std::string>;

TEST(PreTokenizer, WordsAndSpaces) {
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("  hello"), (V{" ", " hello"}));        // \s+(?!\S) leaves one space for the word
  EXPECT_EQ(split("a  "), (V{"a", "  "}));                 // trailing run kept whole
  EXPECT_EQ(split("\thello"), (V{"\thello"}));             // any non-letter prefix, not just space
  EXPECT_EQ(split("x \n\n y"), (V{"x", " \n\n", " y"}));   // \s*[\r\n]+ up to the last newline
  EXPECT_EQ(split("a\r\n\r\nb"), (V{"a", "\r\n\r\n", "b"}));
  EXPECT_EQ(split(" 1"), (V{" ", "1"}));
}

TEST(PreTokenizer, ContractionsDigitsPunctuation) {
  EXPECT_EQ(split("I'm"), (V{"I", "'m"}));
  EXPECT_EQ(split("WE'LL"), (V{"WE", "'LL"}));             // ASCII case-insensitive
  EXPECT_EQ(split("'hello"), (V{"'hello"}));               // not a contraction: prefix of the word
  EXPECT_EQ(split("2024"), (V{"2", "0", "2", "4"}));       // single digits
  EXPECT_EQ(split("a...!\n\nb"), (V{"a", "...!\n\n", "b"}));
  EXPECT_EQ(split(" ({x})"), (V{" ({", "x", "})"}));
  EXPECT_EQ(split("你好，世界"), (V{"你好", "，世界"}));
}

TEST(PreTokenizer, MarksOnlyJoinWordsInQwen35) {
  // "é" decomposed: e + U+0301. Qwen2 splits the mark off; Qwen3.5 keeps it in the word.
  EXPECT_EQ(split("cafe\xCC\x81s", PreTokenizerKind::Qwen2), (V{"cafe", "\xCC\x81s"}));
  EXPECT_EQ(split("cafe\xCC\x81s", PreTokenizerKind::Qwen35), (V{"cafe\xCC\x81s"}));
  EXPECT_EQ(split("\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87", PreTokenizerKind::Qwen35).size(), 1u);
}

TEST(PreTokenizer, Names) {
  PreTokenizerKind k;
  EXPECT_TRUE(pre_tokenizer_from_name("qwen35", k));
  EXPECT_EQ(k, PreTokenizerKind::Qwen35);
  EXPECT_FALSE(pre_tokenizer_from_name("llama3", k));
}

}  // namespace
}  // namespace tandem::text
