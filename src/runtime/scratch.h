// A grow-only, 64-byte aligned scratch buffer. Hot paths size it once (or let it
// grow on the first, largest batch) and then reuse it, so that no allocation
// happens per token.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace tandem {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  // Returns at least `bytes` bytes; contents are not preserved when it grows.
  void* get(size_t bytes) {
    if (bytes > capacity_) {
      std::free(data_);
      const size_t rounded = (bytes + 63) / 64 * 64;
      data_ = std::aligned_alloc(64, rounded);
      if (!data_) throw std::bad_alloc();
      capacity_ = rounded;
    }
    return data_;
  }
  template <typename T>
  T* get_as(size_t count) { return static_cast<T*>(get(count * sizeof(T))); }
  size_t capacity() const { return capacity_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace tandem
