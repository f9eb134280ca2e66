// The codes of the ggml block formats as the scalar routines read them: which types are alike
// (the legacy 32-element blocks with or without a min and a fifth bit, the Q4_K / Q5_K pair) and
// the codes of one block, in element order. Read by gguf/quants.cpp (dequantization) and
// kernels/matmul/vec_dot.cpp (the scalar dot products), so that a block's layout is written once.
// Everything here is static: a copy compiled into a SIMD translation unit can never be linked for
// another unit.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gguf/quants.h"

namespace tandem {

template <typename B>
constexpr bool kHasMin = std::is_same_v<B, BlockQ4_1> || std::is_same_v<B, BlockQ5_1>;
template <typename B>
constexpr bool kFifthBit = std::is_same_v<B, BlockQ5_0> || std::is_same_v<B, BlockQ5_1>;
template <typename B>
constexpr bool kEightBit = std::is_same_v<B, BlockQ8_0> || std::is_same_v<B, BlockQ8_1>;
template <typename B>
constexpr bool kLegacy = kHasMin<B> || kFifthBit<B> || kEightBit<B> || std::is_same_v<B, BlockQ4_0>;
template <typename B>
constexpr bool kK4 = std::is_same_v<B, BlockQ4_K> || std::is_same_v<B, BlockQ5_K>;

// The 32 codes of a legacy block, offset included (Q4_0: −8, Q5_0: −16): the low nibbles of qs
// are elements 0..15, the high ones 16..31; a 5-bit type's fifth bit of element e is bit e of qh.
template <typename B>
static void legacy_codes(const B& b, int* q) {
  if constexpr (kEightBit<B>) {
    for (int e = 0; e < kQK; ++e) q[e] = b.qs[e];
  } else {
    for (int j = 0; j < kQK / 2; ++j) {
      q[j] = b.qs[j] & 0x0F;
      q[j + kQK / 2] = b.qs[j] >> 4;
    }
    if constexpr (kFifthBit<B>) {
      uint32_t qh;
      std::memcpy(&qh, b.qh, sizeof qh);
      for (int e = 0; e < kQK; ++e) q[e] |= static_cast<int>(((qh >> e) & 1u) << 4);
    }
    const int offset = std::is_same_v<B, BlockQ4_0> ? 8 : std::is_same_v<B, BlockQ5_0> ? 16 : 0;
    for (int e = 0; e < kQK; ++e) q[e] -= offset;
  }
}

// The 256 unsigned codes of a Q4_K / Q5_K super-block: per 64 elements the low nibbles of 32
// bytes of qs, then their high nibbles; Q5_K adds 16 where bit 2c (low) or 2c + 1 (high) of
// qh[l] is set for the c-th 64.
template <typename B>
static void k4_codes(const B& b, int8_t* q) {
  for (int c = 0; c < 4; ++c) {
    [[maybe_unused]] const uint8_t u1 = static_cast<uint8_t>(1u << (2 * c)), u2 = static_cast<uint8_t>(2u << (2 * c));
    for (int l = 0; l < 32; ++l) {
      int lo = b.qs[c * 32 + l] & 0x0F, hi = b.qs[c * 32 + l] >> 4;
      if constexpr (std::is_same_v<B, BlockQ5_K>) {
        lo += b.qh[l] & u1 ? 16 : 0;
        hi += b.qh[l] & u2 ? 16 : 0;
      }
      q[c * 64 + l] = static_cast<int8_t>(lo);
      q[c * 64 + 32 + l] = static_cast<int8_t>(hi);
    }
  }
}

}  // namespace tandem
