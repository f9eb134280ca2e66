#include "kernels/matmul/weight_pack.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "gguf/quants.h"
#include "kernels/matmul/matmul.h"
#include "runtime/huge_pages.h"

namespace tandem::kernels {
namespace {

constexpr int kRows = 16;  // output rows per B tile

size_t tile_bytes(GgmlType t) { return t == GgmlType::Q4_0 ? 256 : 512; }

// Elements per block of a packable type: a packed row holds whole blocks (super-blocks for
// the K-quants).
int64_t block_elems(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K ? kQK_K : kQK;
}

// The 256 codes (0..63, value + 32) of a Q6_K super-block, in element order. ggml's
// dequantize_row_q6_K: element 128h + 32m + l (l < 32) is the low nibble (m < 2) or high
// nibble (m >= 2) of ql[64h + l + 32(m & 1)], with bits 2m, 2m + 1 of qh[32h + l] above it.
void q6_K_codes(const BlockQ6_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = b.ql[64 * h + l], hi = b.ql[64 * h + l + 32], qh = b.qh[32 * h + l];
      uint8_t* e = q + 128 * h + l;
      e[0] = static_cast<uint8_t>((lo & 0x0F) | (qh & 3) << 4);
      e[32] = static_cast<uint8_t>((hi & 0x0F) | ((qh >> 2) & 3) << 4);
      e[64] = static_cast<uint8_t>((lo >> 4) | ((qh >> 4) & 3) << 4);
      e[96] = static_cast<uint8_t>((hi >> 4) | ((qh >> 6) & 3) << 4);
    }
}

void pack_q6_K(const uint8_t* w, size_t stride, int64_t rows, int64_t n, uint8_t* out) {
  const int64_t nb = n / kQK_K, groups = (rows + kRows - 1) / kRows;
  const size_t gbytes = packed_group_bytes(GgmlType::Q6_K, n);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* grp = out + static_cast<size_t>(g) * gbytes;
    auto* dsec = reinterpret_cast<uint16_t*>(grp + static_cast<size_t>(nb) * kQ6KSuperBlockBytes);
    for (int o = 0; o < kRows && g * kRows + o < rows; ++o) {
      const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(g * kRows + o) * stride);
      for (int64_t s = 0; s < nb; ++s) {
        const BlockQ6_K& b = blocks[s];
        uint8_t* sb = grp + static_cast<size_t>(s) * kQ6KSuperBlockBytes;
        dsec[s * kRows + o] = b.d;
        uint8_t codes[kQK_K];
        q6_K_codes(b, codes);
        for (int j = 0; j < 16; ++j) {
          sb[kQ6KScalesOffset + 16 * j + o] = static_cast<uint8_t>(b.scales[j]);
          uint8_t* A = sb + kQ6KSubBlockBytes * j;
          uint8_t *B = A + 64, *C = A + 128;
          for (int e = 0; e < 4; ++e) {
            const uint8_t* q = codes + 16 * j + e;  // q[4m]: quad m's element e
            A[4 * o + e] = static_cast<uint8_t>((q[0] & 15) | (q[4] & 15) << 4);
            B[4 * o + e] = static_cast<uint8_t>((q[8] & 15) | (q[12] & 15) << 4);
            C[4 * o + e] = static_cast<uint8_t>((q[0] >> 4) | (q[4] >> 4) << 2 | (q[8] >> 4) << 4 | (q[12] >> 4) << 6);
          }
        }
      }
    }
  }
}

// Q4_K, and Q5_K (Block = BlockQ5_K: the same fields plus qh, appended as 8 more lines).
template <typename Block>
void pack_q4_K(const uint8_t* w, size_t stride, int64_t rows, int64_t n, uint8_t* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  constexpr size_t kSb = kFifthBit ? kQ5KSuperBlockBytes : kQ4KSuperBlockBytes;
  const int64_t nb = n / kQK_K, groups = (rows + kRows - 1) / kRows;
  const size_t gbytes = packed_group_bytes(kFifthBit ? GgmlType::Q5_K : GgmlType::Q4_K, n);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* grp = out + static_cast<size_t>(g) * gbytes;
    for (int o = 0; o < kRows && g * kRows + o < rows; ++o) {
      const auto* blocks = reinterpret_cast<const Block*>(w + static_cast<size_t>(g * kRows + o) * stride);
      for (int64_t s = 0; s < nb; ++s) {
        const Block& b = blocks[s];
        uint8_t* sb = grp + static_cast<size_t>(s) * kSb;
        if constexpr (kFifthBit)
          for (int line = 0; line < 8; ++line) std::memcpy(sb + kQ5KHighOffset + 64 * line + 4 * o, b.qh + 4 * line, 4);
        for (int line = 0; line < 32; ++line)  // line 8c + i: qs[32c + 4i ..] = qs[4 · line ..]
          std::memcpy(sb + 64 * line + 4 * o, b.qs + 4 * line, 4);
        for (int j = 0; j < 8; ++j) {
          int sc = 0, m = 0;
          k4_scale_min(j, b.scales, &sc, &m);
          sb[kQ4KScalesOffset + 16 * j + o] = static_cast<uint8_t>(sc);
          sb[kQ4KMinsOffset + 32 * (j / 2) + 2 * o + (j & 1)] = static_cast<uint8_t>(m);
        }
        std::memcpy(sb + kQ4KDOffset + 2 * o, &b.d, 2);
        std::memcpy(sb + kQ4KDOffset + 32 + 2 * o, &b.dmin, 2);
      }
    }
  }
}

}  // namespace

bool packable(GgmlType t) {
  return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
         t == GgmlType::Q6_K;
}

bool packable(const WeightMatrix& W) {
  return packable(W.type) && W.rows > 0 && W.cols % block_elems(W.type) == 0;
}

size_t packed_group_bytes(GgmlType t, int64_t n) {
  if (t == GgmlType::Q4_K) return static_cast<size_t>(n / kQK_K) * kQ4KSuperBlockBytes;
  if (t == GgmlType::Q5_K) return static_cast<size_t>(n / kQK_K) * kQ5KSuperBlockBytes;
  if (t == GgmlType::Q6_K)
    return (static_cast<size_t>(n / kQK_K) * (kQ6KSuperBlockBytes + kRows * sizeof(uint16_t)) + 63) / 64 * 64;
  const size_t nb = static_cast<size_t>(n / kQK);
  return (nb * (tile_bytes(t) + kRows * sizeof(uint16_t)) + 63) / 64 * 64;
}

size_t packed_bytes(GgmlType t, int64_t rows, int64_t n) {
  return static_cast<size_t>((rows + kRows - 1) / kRows) * packed_group_bytes(t, n);
}

void pack_weights(GgmlType t, const uint8_t* w, size_t stride, int64_t rows, int64_t n, uint8_t* out) {
  if (!packable(t)) throw std::invalid_argument(std::string("pack_weights: type ") + ggml_type_name(t) + " has no packed form");
  const int64_t block = block_elems(t);
  if (n % block != 0)
    throw std::invalid_argument("pack_weights: row length " + std::to_string(n) + " of a " + ggml_type_name(t) +
                                " matrix is not a multiple of " + std::to_string(block));
  std::memset(out, 0, packed_bytes(t, rows, n));
  if (t == GgmlType::Q6_K) return pack_q6_K(w, stride, rows, n, out);
  if (t == GgmlType::Q4_K) return pack_q4_K<BlockQ4_K>(w, stride, rows, n, out);
  if (t == GgmlType::Q5_K) return pack_q4_K<BlockQ5_K>(w, stride, rows, n, out);
  const int64_t nb = n / kQK, groups = (rows + kRows - 1) / kRows;
  const size_t gbytes = packed_group_bytes(t, n), tb = tile_bytes(t);
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* grp = out + static_cast<size_t>(g) * gbytes;
    auto* scales = reinterpret_cast<uint16_t*>(grp + static_cast<size_t>(nb) * tb);
    for (int o = 0; o < kRows; ++o) {
      const int64_t row = g * kRows + o;
      if (row >= rows) break;  // zero rows (and zero scales) past the matrix
      const uint8_t* src = w + static_cast<size_t>(row) * stride;
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t* tile = grp + static_cast<size_t>(b) * tb;
        if (t == GgmlType::Q8_0) {
          const auto& blk = reinterpret_cast<const BlockQ8_0*>(src)[b];
          scales[b * kRows + o] = blk.d;
          // tile byte (k/4)*64 + o*4 + k%4 = code k of row o
          for (int k = 0; k < kQK; ++k) tile[(k / 4) * 64 + o * 4 + k % 4] = static_cast<uint8_t>(blk.qs[k]);
        } else {
          const auto& blk = reinterpret_cast<const BlockQ4_0*>(src)[b];
          scales[b * kRows + o] = blk.d;
          // Element k < 16 is the low nibble of qs[k], element 16 + k the high one. Tile row
          // r < 4 (elements 4r..4r+3) goes to the low nibbles of packed row r, tile row 4 + r
          // (elements 16+4r..) to its high nibbles.
          for (int k = 0; k < 16; ++k) {
            const uint8_t lo = static_cast<uint8_t>((blk.qs[k] & 0x0F) ^ 8);
            const uint8_t hi = static_cast<uint8_t>((blk.qs[k] >> 4) ^ 8);
            uint8_t& byte = tile[(k / 4) * 64 + o * 4 + k % 4];
            byte = static_cast<uint8_t>(lo | (hi << 4));
          }
        }
      }
    }
  }
}

void PackedWeights::Free::operator()(uint8_t* p) const { std::free(p); }

bool PackedWeights::pack(WeightMatrix& W) {
  if (W.packed || !packable(W)) return false;
  const size_t n = packed_bytes(W.type, W.rows, W.cols);
  uint8_t* p = carve(n);
  pack_weights(W.type, W.data, W.row_stride, W.rows, W.cols, p);
  W.packed = p;
  bytes_ += n;
  ++matrices_;
  return true;
}

uint8_t* PackedWeights::carve(size_t n) {
  n = (n + 63) / 64 * 64;
  if (n > arena_left_) {
    const size_t size = std::max(kArenaBytes, n);  // allocate_streamed rounds to whole huge pages
    arenas_.emplace_back(static_cast<uint8_t*>(allocate_streamed(size)));  // read end to end per token
    next_ = arenas_.back().get();
    arena_left_ = size;
  }
  uint8_t* p = next_;
  next_ += n;
  arena_left_ -= n;
  return p;
}

}  // namespace tandem::kernels
