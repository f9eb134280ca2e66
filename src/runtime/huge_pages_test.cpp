#include "runtime/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace tandem {
namespace {

bool aligned_to(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(HugePages, SmallBuffersAreCacheLineAligned) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{4097}, kHugePageBytes - 1}) {
    void* p = allocate_streamed(n);
    EXPECT_TRUE(aligned_to(p, 64)) << n;
    std::memset(p, 0xA5, n);  // every byte asked for is writable
    std::free(p);
  }
}

TEST(HugePages, LargeBuffersAreHugePageAlignedWhenRequested) {
  const size_t n = 3 * kHugePageBytes + 123;  // not a whole number of huge pages
  auto* p = static_cast<uint8_t*>(allocate_streamed(n));
  EXPECT_TRUE(aligned_to(p, huge_pages_requested() ? kHugePageBytes : 64));
  std::memset(p, 0x5A, n);
  EXPECT_EQ(p[0], 0x5A);
  EXPECT_EQ(p[n - 1], 0x5A);
  std::free(p);
}

TEST(HugePages, ZeroBytesGiveAFreeablePointer) {
  void* p = allocate_streamed(0);
  EXPECT_NE(p, nullptr);
  std::free(p);
}

}  // namespace
}  // namespace tandem
