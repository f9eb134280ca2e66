#include "text/bpe.h"

#include <gtest/gtest.h>

#include <random>

namespace tandem::text {
namespace {

// Alphabet: byte b -> id b. Merges over 'a','b','c' produce ids 256+.
BpeMerges toy() {
  BpeMerges m;
  for (int b = 0; b < 256; ++b) m.set_byte_token(static_cast<uint8_t>(b), b);
  m.add('a', 'b', 256, 0);  // ab
  m.add('a', 'a', 257, 1);  // aa
  m.add(256, 'c', 258, 2);  // abc
  m.add('b', 'c', 259, 3);  // bc
  m.add(257, 257, 260, 4);  // aaaa
  m.add('c', 'a', 261, 5);  // ca
  return m;
}

std::vector<int32_t> enc(const BpeMerges& m, std::string_view s) {
  std::vector<int32_t> out;
  m.encode(s, out);
  return out;
}

TEST(Bpe, LowestRankFirstLeftmostOnTies) {
  const auto m = toy();
  EXPECT_EQ(enc(m, "abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(enc(m, "aaa"), (std::vector<int32_t>{257, 'a'}));  // leftmost "aa" wins the tie
  EXPECT_EQ(enc(m, "aaaa"), (std::vector<int32_t>{260}));
  EXPECT_EQ(enc(m, "cab"), (std::vector<int32_t>{'c', 256}));  // "ab" (rank 0) before "ca" (rank 5)
  EXPECT_EQ(enc(m, "xyz"), (std::vector<int32_t>{'x', 'y', 'z'}));
  EXPECT_TRUE(enc(m, "").empty());
}

TEST(Bpe, FirstRankOfADuplicateMergeWins) {
  auto m = toy();
  m.add('a', 'b', 999, 100);
  EXPECT_EQ(enc(m, "ab"), (std::vector<int32_t>{256}));
}

TEST(Bpe, LinearAndHeapAgree) {
  const auto m = toy();
  std::mt19937 rng(3);
  for (int it = 0; it < 3000; ++it) {
    std::string s(1 + rng() % 200, 'a');
    for (char& c : s) c = "abcx"[rng() % 4];
    std::vector<int32_t> a, b;
    if (s.size() <= BpeMerges::kLinearMax) m.encode_linear(s, a);
    else m.encode_heap(s, a);
    m.encode_heap(s, b);
    ASSERT_EQ(a, b) << s;
  }
}

}  // namespace
}  // namespace tandem::text
