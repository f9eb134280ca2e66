// _start, the system calls and the memory functions a freestanding program must provide (the
// compiler emits calls to memcpy / memset for copies and zeroing even with -ffreestanding).
#include "hexagon/dsp/runtime.h"

namespace tandem::dsp {
namespace {

// asm-generic/unistd.h as a 32-bit architecture sees it: 222 is mmap2 (offset in pages; we map
// anonymous memory only, offset 0).
enum : long { kRead = 63, kWrite = 64, kExitGroup = 94, kMunmap = 215, kMmap2 = 222 };

long syscall6(long nr, long a0, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0) {
  register long r0 asm("r0") = a0;
  register long r1 asm("r1") = a1;
  register long r2 asm("r2") = a2;
  register long r3 asm("r3") = a3;
  register long r4 asm("r4") = a4;
  register long r5 asm("r5") = a5;
  register long r6 asm("r6") = nr;
  asm volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6) : "memory");
  return r0;
}

}  // namespace

void exit_process(int code) {
  syscall6(kExitGroup, code);
  __builtin_unreachable();
}

bool read_all(int fd, void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const long got = syscall6(kRead, fd, reinterpret_cast<long>(p), static_cast<long>(n));
    if (got == -4) continue;  // EINTR
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* src, size_t n) {
  auto* p = static_cast<const uint8_t*>(src);
  while (n > 0) {
    const long put = syscall6(kWrite, fd, reinterpret_cast<long>(p), static_cast<long>(n));
    if (put == -4) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

void* map_memory(size_t n) {
  enum : long { kProtReadWrite = 3, kMapPrivateAnonymous = 0x22 };
  const long p = syscall6(kMmap2, 0, static_cast<long>(n), kProtReadWrite, kMapPrivateAnonymous, -1, 0);
  // The kernel returns -errno (-4095..-1) on failure.
  return (p < 0 && p > -4096) ? nullptr : reinterpret_cast<void*>(p);
}

void unmap_memory(void* p, size_t n) {
  if (p) syscall6(kMunmap, reinterpret_cast<long>(p), static_cast<long>(n));
}

}  // namespace tandem::dsp

extern "C" {

// The stack pointer Linux hands over is 8-byte aligned, as the Hexagon ABI wants; functions that
// spill HVX vectors realign their own frames.
[[noreturn]] void _start() { tandem::dsp::exit_process(dsp_main()); }

// Byte loops: -ffreestanding keeps the compiler from turning them back into calls to themselves.
void* memcpy(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
  return dst;
}

void* memmove(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (d < s) {
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; --i) d[i - 1] = s[i - 1];
  }
  return dst;
}

void* memset(void* dst, int c, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(c);
  return dst;
}

int memcmp(const void* a, const void* b, size_t n) {
  auto* x = static_cast<const uint8_t*>(a);
  auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

}  // extern "C"
