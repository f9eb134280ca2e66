// Storage aligned to a cache line (64 bytes), for buffers that kernels write with streaming
// stores: a 64-byte streaming store needs an aligned address, and whole lines are what make
// it skip the read of the old contents.
//
// From 2 MiB up the storage comes on transparent huge pages (runtime/huge_pages.h): these are the
// recurrent states and their checkpoints, copied whole when a checkpoint is taken. A fresh
// checkpoint's first touch on small pages is one page fault per 4 KiB, which on a virtual machine
// cost more than the copy itself (Granite-4.0-H's 73.8 MiB states: bench/RESULTS.md); a huge page
// faults once per 2 MiB.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "runtime/huge_pages.h"

namespace tandem {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_streamed(n * sizeof(T))); }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace tandem
