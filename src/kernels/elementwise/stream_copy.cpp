#include "kernels/elementwise/stream_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tandem::kernels {

void copy_streaming(float* dst, const float* src, int64_t n) {
  if (n <= 0) return;
#if defined(__SSE2__)
  if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)  // a line per step: four stores fill one write-combining buffer
      for (int q = 0; q < 4; ++q) _mm_stream_ps(dst + i + 4 * q, _mm_loadu_ps(src + i + 4 * q));
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    std::memcpy(dst + i, src + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_sfence();
    return;
  }
#endif
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace tandem::kernels
