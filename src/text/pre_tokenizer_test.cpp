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

// LLAMA3 regex (hybrids.md A8). The expectations are the regex's matches as JavaScript's RegExp
// (/u) gives them, the engine of the reference tokenizer; checked with node when written.
TEST(PreTokenizer, Llama3ContractionsInAnyCase) {
  const auto L = PreTokenizerKind::Llama3;
  EXPECT_EQ(split("I'M HERE", L), (V{"I", "'M", " HERE"}));
  EXPECT_EQ(split("WE'LL GO", L), (V{"WE", "'LL", " GO"}));
  EXPECT_EQ(split("don'T", L), (V{"don", "'T"}));
  EXPECT_EQ(split("THEY'VE", L), (V{"THEY", "'VE"}));
  EXPECT_EQ(split("SHE'D IT'S", L), (V{"SHE", "'D", " IT", "'S"}));
  EXPECT_EQ(split("'Re", L), (V{"'Re"}));
  EXPECT_EQ(split("'hello", L), (V{"'hello"}));
}

TEST(PreTokenizer, Llama3DigitsInRunsOfUpToThree) {
  const auto L = PreTokenizerKind::Llama3;
  EXPECT_EQ(split("1", L), (V{"1"}));
  EXPECT_EQ(split("12", L), (V{"12"}));
  EXPECT_EQ(split("123", L), (V{"123"}));
  EXPECT_EQ(split("1234", L), (V{"123", "4"}));
  EXPECT_EQ(split("12345", L), (V{"123", "45"}));
  EXPECT_EQ(split("123456", L), (V{"123", "456"}));
  EXPECT_EQ(split("1234567", L), (V{"123", "456", "7"}));
  EXPECT_EQ(split(" 123", L), (V{" ", "123"}));
  EXPECT_EQ(split("x2024y", L), (V{"x", "202", "4", "y"}));
  EXPECT_EQ(split("$100", L), (V{"$", "100"}));
  EXPECT_EQ(split("v1.25 -> 3,000", L), (V{"v", "1", ".", "25", " ->", " ", "3", ",", "000"}));
  EXPECT_EQ(split("\xD9\xA3\xD9\xA4\xD9\xA5\xD9\xA6", L), (V{"\xD9\xA3\xD9\xA4\xD9\xA5", "\xD9\xA6"}));  // Arabic-Indic ٣٤٥٦
  EXPECT_EQ(split("\xC2\xBD\xC2\xBE", L), (V{"\xC2\xBD\xC2\xBE"}));  // ½¾: \p{N} is every number, not just Nd
  // Qwen2 keeps single digits.
  EXPECT_EQ(split("x2024y"), (V{"x", "2", "0", "2", "4", "y"}));
}

TEST(PreTokenizer, Llama3WhitespacePunctuationAndLetters) {
  const auto L = PreTokenizerKind::Llama3;
  EXPECT_EQ(split("a\n\n  b", L), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(split("a  \n b", L), (V{"a", "  \n", " b"}));
  EXPECT_EQ(split("hello world\n", L), (V{"hello", " world", "\n"}));
  EXPECT_EQ(split("a  ", L), (V{"a", "  "}));
  EXPECT_EQ(split("  \n\n\t", L), (V{"  \n\n", "\t"}));
  EXPECT_EQ(split("\t\tx", L), (V{"\t", "\tx"}));
  EXPECT_EQ(split("a\xC2\xA0" "b", L), (V{"a", "\xC2\xA0" "b"}));  // NBSP is \s and a word prefix
  EXPECT_EQ(split("...!?", L), (V{"...!?"}));
  EXPECT_EQ(split("a, b", L), (V{"a", ",", " b"}));
  EXPECT_EQ(split("x ({[y", L), (V{"x", " ({[", "y"}));
  EXPECT_EQ(split("!!\n\nz", L), (V{"!!\n\n", "z"}));
  EXPECT_EQ(split("a.\r\nb", L), (V{"a", ".\r\n", "b"}));
  EXPECT_EQ(split("$hello", L), (V{"$hello"}));
  EXPECT_EQ(split("na\xC3\xAFve caf\xC3\xA9", L), (V{"na\xC3\xAFve", " caf\xC3\xA9"}));
  EXPECT_EQ(split("日本語テキスト", L), (V{"日本語テキスト"}));
  EXPECT_EQ(split("Привет, мир", L), (V{"Привет", ",", " мир"}));
  // Marks are not letters here (as in qwen2): a decomposed accent starts a new piece.
  EXPECT_EQ(split("cafe\xCC\x81s", L), (V{"cafe", "\xCC\x81s"}));
}

TEST(PreTokenizer, Names) {
  PreTokenizerKind k;
  EXPECT_TRUE(pre_tokenizer_from_name("qwen35", k));
  EXPECT_EQ(k, PreTokenizerKind::Qwen35);
  PreTokenizerRules r;
  for (const char* name : {"lfm2", "llama3", "llama-bpe", "llama-v3"}) {
    ASSERT_TRUE(pre_tokenizer_rules(name, r)) << name;
    EXPECT_EQ(r.kind, PreTokenizerKind::Llama3);
    EXPECT_TRUE(r.ignore_merges);
    EXPECT_TRUE(r.add_bos);
  }
  ASSERT_TRUE(pre_tokenizer_rules("dbrx", r));
  EXPECT_EQ(r.kind, PreTokenizerKind::Llama3);
  EXPECT_FALSE(r.ignore_merges);
  EXPECT_FALSE(r.add_bos);
  ASSERT_TRUE(pre_tokenizer_rules("qwen2", r));
  EXPECT_FALSE(r.ignore_merges || r.add_bos);
  EXPECT_FALSE(pre_tokenizer_from_name("gpt-4o", k));
  EXPECT_FALSE(pre_tokenizer_rules("default", r));
}

}  // namespace
}  // namespace tandem::text
