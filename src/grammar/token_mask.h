// The set of tokens a grammar state allows, as a bitset over the whole vocabulary.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::grammar {

struct TokenMask {
  std::vector<uint64_t> bits;  // (n_vocab + 63) / 64 words; bit i: token i allowed
  int64_t n_allowed = 0;
  bool test(int32_t id) const {
    const size_t w = static_cast<size_t>(id) >> 6;
    return id >= 0 && w < bits.size() && ((bits[w] >> (id & 63)) & 1u);
  }
};

}  // namespace tandem::grammar
