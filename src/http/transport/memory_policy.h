// The process's memory as a server sees it (issue 51: 40 large requests on new connections left
// +4.5 GB resident). Three things kept freed memory:
//   - per-thread scratch that kept one request's high-water mark (text/scratch.h now drops it);
//   - glibc's dynamic mmap threshold: once a large block is freed, blocks up to that size come
//     from the heap instead of their own mapping, and a heap keeps its pages after free when small
//     blocks still live above them. configure_allocator() fixes the threshold, so that a large
//     buffer (a request body, a parse tree's arrays, an answer) is always its own mapping and goes
//     back to the system when freed;
//   - glibc's per-thread arenas: a worker's arena keeps the free pages of the small blocks of the
//     last large request it ran. release_free_memory() (malloc_trim) hands them back; the server
//     calls it after a request whose body was large, where its cost (a walk over the arenas,
//     microseconds to a millisecond) is small next to the request's.
// Outside glibc (bionic) the allocator returns memory by itself and these do nothing.
#pragma once

#include <cstddef>

namespace tandem::http {

// Sets the allocator's mmap threshold (M_MMAP_THRESHOLD) to kMmapThresholdBytes. Call once at start.
void configure_allocator();
inline constexpr size_t kMmapThresholdBytes = size_t(1) << 20;

// Returns the free pages of every malloc arena to the system (malloc_trim).
void release_free_memory();

// The process's resident set size (/proc/self/statm), 0 when unreadable.
size_t process_rss_bytes();

}  // namespace tandem::http
