// Checksum64, BinaryWriter and BinaryReader (runtime/binary_io.h): the checksum does not depend on
// how the bytes are cut into calls, a change in any one byte changes it, and a reader refuses to
// read past the payload it was given or past the end of the file, naming the file.
#include "runtime/binary_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace tandem {
namespace {

std::vector<unsigned char> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> b(n);
  for (auto& x : b) x = static_cast<unsigned char>(rng());
  return b;
}

uint64_t sum_of(const std::vector<unsigned char>& b) {
  Checksum64 c;
  c.update(b.data(), b.size());
  return c.value();
}

TEST(Checksum64, IndependentOfHowTheBytesAreSplit) {
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 1000}) {
    const auto b = random_bytes(n, static_cast<unsigned>(n));
    const uint64_t whole = sum_of(b);
    std::mt19937 rng(5);
    for (int trial = 0; trial < 20; ++trial) {
      Checksum64 c;
      size_t at = 0;
      while (at < n) {
        const size_t k = std::min(n - at, static_cast<size_t>(rng() % 13));
        c.update(b.data() + at, k);
        at += k;
      }
      EXPECT_EQ(c.value(), whole) << n;
    }
  }
}

TEST(Checksum64, EveryOneByteChangeAndTheLengthChangeIt) {
  const auto b = random_bytes(257, 3);
  const uint64_t base = sum_of(b);
  for (size_t i = 0; i < b.size(); ++i)
    for (unsigned char bit : {0x01, 0x80}) {
      auto c = b;
      c[i] ^= bit;
      EXPECT_NE(sum_of(c), base) << i;
    }
  auto longer = b;
  longer.push_back(0);  // a zero byte appended: the padding alone would not see it
  EXPECT_NE(sum_of(longer), base);
}

TEST(BinaryReader, RefusesToReadPastThePayloadOrTheFile) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  BinaryWriter w(f, "t.bin");
  w.pod<uint64_t>(42);
  w.string("hello");
  w.pod<uint64_t>(1000);  // a count no payload of this size can hold
  const uint64_t n = w.bytes();
  std::rewind(f);
  BinaryReader r(f, n, "t.bin");
  EXPECT_EQ(r.pod<uint64_t>(), 42u);
  EXPECT_EQ(r.string(), "hello");
  try {
    r.count(8, "things");
    FAIL();
  } catch (const BinaryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("t.bin"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("does not fit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.checksum().value(), w.checksum().value());
  EXPECT_THROW(r.pod<uint8_t>(), BinaryFormatError);  // nothing left of the payload

  std::rewind(f);
  BinaryReader beyond(f, n + 100, "t.bin");  // a header that claims more than the file has
  char buf[200];
  try {
    beyond.read(buf, sizeof buf);
    FAIL();
  } catch (const BinaryFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  std::fclose(f);
}

}  // namespace
}  // namespace tandem
