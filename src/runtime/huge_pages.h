// Memory for buffers that are read end to end on every token: the packed weight matrices
// (~400 MB per decode step at 0.8B, and again per token group of a prompt). On 4 KiB pages such
// a stream needs a page walk every 4 KiB; on transparent huge pages one TLB entry covers 2 MiB.
// Debian's kernels serve huge pages only to regions that ask (THP mode "madvise"), so large
// buffers are 2 MiB-aligned and advised with MADV_HUGEPAGE. The kernel may still decline (THP
// "never", fragmented memory): the buffer then works as before on small pages.
// Side by side on the AMX machine (bench/history/2026-12-01-xeon-amx.md; with the packed
// matrices in huge-page arenas, kernels::PackedWeights): 0.8B Q4_0 decode 17.29 / 17.38 /
// 17.17 ms per token against 18.19 / 18.37 / 17.67 on small pages, prefill within noise.
#pragma once

#include <cstddef>

namespace tandem {

constexpr size_t kHugePageBytes = size_t{1} << 21;

// False when the environment says TANDEM_HUGE_PAGES=0 (read once): every buffer then gets
// small pages, for side-by-side measurements.
bool huge_pages_requested();

// `bytes` of uninitialised memory, 64-byte aligned; from kHugePageBytes up (and when
// requested) 2 MiB-aligned, rounded up to whole huge pages and advised for them before first
// touch. Release with std::free. Throws std::bad_alloc when out of memory.
void* allocate_streamed(size_t bytes);

}  // namespace tandem
