#include "kernels/elementwise/stream_copy.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cache_aligned.h"

namespace tandem::kernels {
namespace {

// Every length around the 4- and 16-float steps, at aligned and unaligned destinations and
// sources: the copy equals memcpy's, and the floats beside the range are left alone.
TEST(StreamCopy, EqualsMemcpyForEveryLengthAndOffset) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  CacheAlignedVector<float> src(200), dst(200);
  for (float& x : src) x = u(rng);
  for (int64_t n : {0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 150}) {
    for (int64_t dst_off : {0, 1, 2, 4}) {
      for (int64_t src_off : {0, 3}) {
        std::fill(dst.begin(), dst.end(), -7.0f);
        copy_streaming(dst.data() + dst_off, src.data() + src_off, n);
        for (int64_t i = 0; i < static_cast<int64_t>(dst.size()); ++i) {
          const float want = i >= dst_off && i < dst_off + n ? src[static_cast<size_t>(i - dst_off + src_off)] : -7.0f;
          ASSERT_EQ(std::memcmp(&dst[static_cast<size_t>(i)], &want, sizeof(float)), 0)
              << "n " << n << " dst_off " << dst_off << " src_off " << src_off << " at " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tandem::kernels
