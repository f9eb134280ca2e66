#include "kernels/amx_weight_pack.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "gguf/quants.h"
#include "kernels/matmul.h"

namespace tandem::kernels::amx {
namespace {

constexpr int kRows = 16;  // output rows per B tile

size_t tile_bytes(GgmlType t) { return t == GgmlType::Q4_0 ? 256 : 512; }

}  // namespace

bool packable(GgmlType t) { return t == GgmlType::Q4_0 || t == GgmlType::Q8_0; }

size_t packed_group_bytes(GgmlType t, int64_t n) {
  const size_t nb = static_cast<size_t>(n / kQK);
  return (nb * (tile_bytes(t) + kRows * sizeof(uint16_t)) + 63) / 64 * 64;
}

size_t packed_bytes(GgmlType t, int64_t rows, int64_t n) {
  return static_cast<size_t>((rows + kRows - 1) / kRows) * packed_group_bytes(t, n);
}

void pack_weights(GgmlType t, const uint8_t* w, size_t stride, int64_t rows, int64_t n, uint8_t* out) {
  if (!packable(t)) throw std::invalid_argument(std::string("amx::pack_weights: type ") + ggml_type_name(t) + " has no packed form");
  if (n % kQK != 0) throw std::invalid_argument("amx::pack_weights: row length " + std::to_string(n) + " is not a multiple of 32");
  const int64_t nb = n / kQK, groups = (rows + kRows - 1) / kRows;
  const size_t gbytes = packed_group_bytes(t, n), tb = tile_bytes(t);
  std::memset(out, 0, packed_bytes(t, rows, n));
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
  if (W.amx_packed || !packable(W.type) || W.cols % kQK != 0 || W.rows <= 0) return false;
  const size_t n = packed_bytes(W.type, W.rows, W.cols);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
  if (!p) throw std::bad_alloc();
  bufs_.emplace_back(p);
  pack_weights(W.type, W.data, W.row_stride, W.rows, W.cols, p);
  W.amx_packed = p;
  bytes_ += n;
  return true;
}

}  // namespace tandem::kernels::amx
