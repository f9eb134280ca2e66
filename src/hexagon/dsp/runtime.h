// The DSP side's whole runtime: there is no Hexagon libc, libm or C++ runtime in Debian, so the
// op server is freestanding (docs/hexagon.md). Linux system calls (trap0(#1), the asm-generic
// numbers of a 32-bit architecture), memory from mmap, whole reads and writes of a pipe. Under qemu-hexagon-static these are the
// host kernel's calls; on a phone the same seam is QuRT's (dspqueue buffers, HAP_malloc).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace tandem::dsp {

[[noreturn]] void exit_process(int code);
// Reads exactly n bytes (false at end of input or on an error: the host went away).
bool read_all(int fd, void* dst, size_t n);
// Writes exactly n bytes (false when the host closed the pipe).
bool write_all(int fd, const void* src, size_t n);
// n bytes of zeroed memory aligned to a page (so to an HVX vector), or nullptr.
void* map_memory(size_t n);
void unmap_memory(void* p, size_t n);

}  // namespace tandem::dsp

// The program's entry, called by _start; its return value is the exit status.
int dsp_main();
