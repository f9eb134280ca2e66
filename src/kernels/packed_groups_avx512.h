// The loop every packed K-quant kernel on the vector units runs (matmul_q4k_vnni.cpp,
// matmul_q6k_vnni.cpp): rows [r0, r1) of a matrix packed in 16-row groups, T tokens. Row
// groups outer, tokens inner in chunks of at most MaxCols: a group stays in L1 while every
// chunk of tokens reuses it, and a chunk's accumulators stay in registers.
//
// Included by AVX-512 translation units only; everything here is static inline.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tandem::kernels::vnni {

// Calls kernel(std::integral_constant<int, NC>{}, group, c0, output, row mask) for each group
// and each chunk of NC <= MaxCols tokens starting at token c0 (output: y + c0 · ldy + the
// group's first row); MaxCols must be 4.
template <int MaxCols, class Kernel>
static inline void for_packed_groups(const uint8_t* packed, size_t group_bytes, int64_t r0, int64_t r1, int64_t T,
                                     float* y, int64_t ldy, Kernel&& kernel) {
  static_assert(MaxCols == 4, "chunks of 1 .. 4 tokens are instantiated");
  for (int64_t o0 = r0; o0 < r1; o0 += 16) {
    const int64_t left = r1 - o0;
    const __mmask16 rmask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
    const uint8_t* grp = packed + static_cast<size_t>(o0 / 16) * group_bytes;
    for (int64_t c0 = 0; c0 < T; c0 += MaxCols) {
      float* yc = y + c0 * ldy + o0;
      switch (T - c0 < MaxCols ? T - c0 : MaxCols) {
        case 1: kernel(std::integral_constant<int, 1>{}, grp, c0, yc, rmask); break;
        case 2: kernel(std::integral_constant<int, 2>{}, grp, c0, yc, rmask); break;
        case 3: kernel(std::integral_constant<int, 3>{}, grp, c0, yc, rmask); break;
        default: kernel(std::integral_constant<int, 4>{}, grp, c0, yc, rmask); break;
      }
    }
  }
}

}  // namespace tandem::kernels::vnni
