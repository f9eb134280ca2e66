// Storage aligned to a cache line (64 bytes), for buffers that kernels write with streaming
// stores: a 64-byte streaming store needs an aligned address, and whole lines are what make
// it skip the read of the old contents.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace tandem {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace tandem
