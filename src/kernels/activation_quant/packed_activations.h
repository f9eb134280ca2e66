// Activation rows converted and laid out for the SIMD matmul kernels.
//
// The conversion is exactly ggml-cpu's (same Q8_0 / Q8_K codes and scales, see
// activation_quant.h); only the layout differs, so that the inner loops need no
// shuffles and no per-block scalar work:
//
//  * kQ8Pairs (for Q4_0 weights): blocks of 32 taken in pairs; 64 signed codes per pair
//    in the order [b0 0..15, b1 0..15, b0 16..31, b1 16..31] (the order a Q4_0 block
//    pair unpacks to), 16 int32 lanes holding -8*sum(codes) of each block in the first
//    lane of its group (the Q4_0 offset, added exactly in integers), and 16 float lanes
//    holding each lane's block scale.
//  * kQ8PairsU (for Q8_0 weights): natural order, codes + 128 as unsigned bytes (VNNI
//    multiplies unsigned by signed), lanes 0-7 / 8-15 scaled by block 0 / block 1.
//  * Q8_K rows (K-quant weights) keep ggml's block_q8_K layout; no repacking needed.
//
// A row with an odd number of blocks is padded with a zero block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::kernels {

struct Q8PairsView {
  const uint8_t* codes;  // npairs * 64 bytes
  const int32_t* corr;   // npairs * 16 (kQ8Pairs only; null otherwise)
  const float* scale;    // npairs * 16
};

enum class PairLayout { kQ8Pairs, kQ8PairsU };

// Bytes one packed row of n elements (n a multiple of 32) takes.
size_t q8_pairs_bytes(int64_t n, PairLayout layout);
// Quantizes x (n floats) like ggml's Q8_0 and writes the packed row to dst (64-byte aligned).
Q8PairsView pack_q8_pairs(const float* x, int64_t n, PairLayout layout, void* dst);

}  // namespace tandem::kernels
