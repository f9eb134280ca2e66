// The loops the row kernels of matmul_avx2.cpp and matmul_avx512.cpp share around their block
// arithmetic (row_kernels.h): weight row after weight row, each row's product with all nc columns
// by a body compiled for that column count (its accumulators then stay in registers), for one
// column the decode GEMV's four rows at a time where the ISA has such a body, and the float rows'
// body over the ISA's vector lanes.
//
// A body is a class template Row<NC> with a static run(const W* row, int64_t count, Column a,
// float* out) writing out[0, NC), count being the row's blocks (its elements for F32 / F16).
//
// Included by several translation units compiled for different instruction sets: everything here
// is in an anonymous namespace, so each unit instantiates its own copy and the linker can never
// hand one ISA's instantiation to another's caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gguf/quants.h"
#include "kernels/matmul/row_kernels.h"

namespace tandem::kernels {
namespace {

// Elements per block of a weight row: what turns a row's n into its block count.
template <typename W>
constexpr int64_t row_block_elements() {
  if constexpr (std::is_same_v<W, float> || std::is_same_v<W, uint16_t>) return 1;  // F32, F16: elements
  else if constexpr (std::is_same_v<W, BlockQ4_K> || std::is_same_v<W, BlockQ5_K> || std::is_same_v<W, BlockQ6_K>)
    return kQK_K;
  else return kQK;
}

// Weight rows [r0, r1) of W, each against the nc columns at a.
template <typename W, template <int> class Row, typename Column>
void rows_by_columns(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const Column* a, int nc,
                     float* y, int64_t ldy) {
  const int64_t count = n / row_block_elements<W>();
  float out[kMaxRowCols];
  for (int64_t r = r0; r < r1; ++r) {
    const W* wr = reinterpret_cast<const W*>(w + static_cast<size_t>(r) * stride);
    switch (nc) {
      case 1: Row<1>::run(wr, count, a, out); break;
      case 2: Row<2>::run(wr, count, a, out); break;
      case 3: Row<3>::run(wr, count, a, out); break;
      case 4: Row<4>::run(wr, count, a, out); break;
      case 5: Row<5>::run(wr, count, a, out); break;
      case 6: Row<6>::run(wr, count, a, out); break;
      case 7: Row<7>::run(wr, count, a, out); break;
      default: Row<kMaxRowCols>::run(wr, count, a, out); break;
    }
    for (int c = 0; c < nc; ++c) y[c * ldy + r] = out[c];
  }
}

// As rows_by_columns, but one column (the decode GEMV) goes four rows at a time through
// Rows4::run(const uint8_t* rows, size_t stride, int64_t count, const Column& a, float* out4),
// whose rows share every activation load; the last r % 4 rows, and several columns, as above.
template <typename W, template <int> class Row, typename Rows4, typename Column>
void rows_by_columns_gemv4(const uint8_t* w, size_t stride, int64_t n, int64_t r0, int64_t r1, const Column* a,
                           int nc, float* y, int64_t ldy) {
  if (nc == 1) {
    float out[4];
    for (; r0 + 4 <= r1; r0 += 4) {
      Rows4::run(w + static_cast<size_t>(r0) * stride, stride, n / row_block_elements<W>(), a[0], out);
      for (int r = 0; r < 4; ++r) y[r0 + r] = out[r];
    }
  }
  rows_by_columns<W, Row>(w, stride, n, r0, r1, a, nc, y, ldy);
}

// The F32 / F16 row body (T = float or uint16_t, activations of the same type), on an ISA's
// float lanes V: V::kStep elements a step, each step's weights loaded once for all NC columns and
// one fused multiply-add per column, then the partial step masked, then each column's lanes
// summed. V provides Acc, kStep, zero(), load(p), load_tail(p, k) (k < kStep elements, the rest
// zero), fma(a, b, c) = a·b + c, sum(acc) and prefetch(row, i) (the weight stream's hint, or
// nothing).
template <class V, int NC>
struct FloatRow {
  template <typename T>
  static void run(const T* w, int64_t n, const T* const* a, float* out) {
    typename V::Acc acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = V::zero();
    int64_t i = 0;
    for (; i + V::kStep <= n; i += V::kStep) {
      V::prefetch(w, i);
      const typename V::Acc wv = V::load(w + i);
      for (int c = 0; c < NC; ++c) acc[c] = V::fma(wv, V::load(a[c] + i), acc[c]);
    }
    if (i < n) {
      const typename V::Acc wv = V::load_tail(w + i, n - i);
      for (int c = 0; c < NC; ++c) acc[c] = V::fma(wv, V::load_tail(a[c] + i, n - i), acc[c]);
    }
    for (int c = 0; c < NC; ++c) out[c] = V::sum(acc[c]);
  }
};

}  // namespace
}  // namespace tandem::kernels
