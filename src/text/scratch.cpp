#include "text/scratch.h"

namespace tandem::text {

namespace detail {
std::atomic<int64_t> g_scratch_bytes{0};
}

size_t scratch_bytes() {
  const int64_t n = detail::g_scratch_bytes.load();
  return n > 0 ? static_cast<size_t>(n) : 0;
}

}  // namespace tandem::text
