#include "runtime/huge_pages.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

namespace tandem {

bool huge_pages_requested() {
  static const bool on = [] {
    const char* env = std::getenv("TANDEM_HUGE_PAGES");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return on;
}

void* allocate_streamed(size_t bytes) {
  const bool huge = bytes >= kHugePageBytes && huge_pages_requested();
  const size_t align = huge ? kHugePageBytes : 64;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  // Advice only: a kernel without THP answers EINVAL and the buffer keeps small pages.
  if (huge) (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace tandem
