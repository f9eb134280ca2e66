#include "text/utf8.h"

#include <gtest/gtest.h>

#include <random>

namespace tandem::text {
namespace {

std::vector<uint32_t> cps(std::string_view s) {
  std::vector<uint32_t> v;
  decode_utf8(s, v);
  return v;
}

TEST(Utf8, DecodesValidText) {
  EXPECT_EQ(cps("a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80"), (std::vector<uint32_t>{'a', 0xE9, 0x4F60, 0x1F600}));
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xEF\xBF\xBD"));
}

// WHATWG / Unicode "maximal subpart": one U+FFFD per ill-formed subsequence, the offending byte
// starts over (these are the cases a TextDecoder produces in the reference).
TEST(Utf8, ReplacesMaximalSubparts) {
  const uint32_t R = kReplacementChar;
  EXPECT_EQ(cps("\x80"), (std::vector<uint32_t>{R}));
  EXPECT_EQ(cps("\xC0\xAF"), (std::vector<uint32_t>{R, R}));              // overlong lead C0
  EXPECT_EQ(cps("\xE0\x80\xAF"), (std::vector<uint32_t>{R, R, R}));      // E0 needs A0..BF
  EXPECT_EQ(cps("\xED\xA0\x80"), (std::vector<uint32_t>{R, R, R}));      // surrogate
  EXPECT_EQ(cps("\xF4\x90\x80\x80"), (std::vector<uint32_t>{R, R, R, R}));  // > U+10FFFF
  EXPECT_EQ(cps("\xE4\xBD"), (std::vector<uint32_t>{R}));                // truncated at end
  EXPECT_EQ(cps("\xE4\xBDx"), (std::vector<uint32_t>{R, 'x'}));          // truncated before ASCII
  EXPECT_EQ(cps("\xF0\x9F\x98"), (std::vector<uint32_t>{R}));
  EXPECT_EQ(cps("\xF5\xFF"), (std::vector<uint32_t>{R, R}));
  EXPECT_FALSE(is_valid_utf8("\xC3"));
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(incomplete_utf8_tail("abc"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xE4"), 1u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xE4\xBD"), 2u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xE4\xBD\xA0"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("\xE4x"), 0u);     // broken, not incomplete
  EXPECT_EQ(incomplete_utf8_tail("\xED\xA0"), 0u);  // can never complete (surrogate)
  EXPECT_EQ(incomplete_utf8_tail(""), 0u);
}

TEST(Utf8, EncodeRoundTripAndRandomBytesNeverCrash) {
  std::vector<uint32_t> all;
  for (uint32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) all.push_back(cp);
  EXPECT_EQ(cps(encode_utf8(all)), all);
  std::string s;
  append_utf8(s, 0xD800);  // not encodable: written as U+FFFD
  EXPECT_EQ(s, "\xEF\xBF\xBD");

  std::mt19937 rng(7);
  for (int it = 0; it < 2000; ++it) {
    std::string b(rng() % 16, '\0');
    for (char& c : b) c = static_cast<char>(rng());
    const auto v = cps(b);
    EXPECT_LE(v.size(), b.size());
    EXPECT_EQ(is_valid_utf8(b), encode_utf8(v) == b);
  }
}

}  // namespace
}  // namespace tandem::text
