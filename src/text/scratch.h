// Per-thread scratch buffers of the tokenizer that never keep one call's high-water mark (issue
// 51: a 10 MB /tokenize grew every HTTP thread's buffers to that size for the thread's life).
//
//   thread_local Scratch<std::vector<uint32_t>> cps;
//   ScratchTrim trim(cps, pieces);   // at scope exit, even on a throw: each buffer whose capacity
//   cps.buf.push_back(...);          // exceeds kScratchKeepBytes is freed
//
// Buffers up to kScratchKeepBytes stay (the usual prompt then allocates nothing); the bytes all
// threads' scratch holds are counted (scratch_bytes(), /metrics tandem_tokenizer_scratch_bytes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <tuple>

namespace tandem::text {

inline constexpr size_t kScratchKeepBytes = size_t(256) << 10;

// Bytes held by every thread's tokenizer scratch now.
size_t scratch_bytes();

namespace detail {
extern std::atomic<int64_t> g_scratch_bytes;
}

template <class C>
struct Scratch {
  C buf;
  size_t counted = 0;  // bytes of buf's capacity in g_scratch_bytes

  ~Scratch() { detail::g_scratch_bytes -= static_cast<int64_t>(counted); }
  // Frees the buffer when it grew past the bound; updates the count.
  void settle() {
    if (buf.capacity() * sizeof(typename C::value_type) > kScratchKeepBytes) C().swap(buf);
    const size_t now = buf.capacity() * sizeof(typename C::value_type);
    detail::g_scratch_bytes += static_cast<int64_t>(now) - static_cast<int64_t>(counted);
    counted = now;
  }
};

template <class... S>
class ScratchTrim {
 public:
  explicit ScratchTrim(S&... s) : s_(&s...) {}
  ~ScratchTrim() {
    std::apply([](auto*... p) { (p->settle(), ...); }, s_);
  }
  ScratchTrim(const ScratchTrim&) = delete;
  ScratchTrim& operator=(const ScratchTrim&) = delete;

 private:
  std::tuple<S*...> s_;
};

}  // namespace tandem::text
