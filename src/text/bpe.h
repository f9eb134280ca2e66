// Byte-pair merging of one pre-tokenized piece (the "model" step of byte-level BPE).
//
// The piece starts as one symbol per byte (the byte's token id); the adjacent pair with the lowest
// merge rank is merged, ties going to the leftmost pair, until no adjacent pair has a merge. That
// is exactly the order of the reference (transformers.js breaks ties by position; HF tokenizers
// likewise). Short pieces use a linear scan over pair ranks; long ones (long whitespace runs, a
// paragraph of CJK text) use a heap so the cost stays O(n log n).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tandem::text {

class BpeMerges {
 public:
  // Registers merge (left, right) -> result with the given rank. The first registration of a pair
  // wins (a repeated merge line cannot change the rank, as in the reference's rank map).
  void add(int32_t left, int32_t right, int32_t result, int32_t rank);
  void set_byte_token(uint8_t b, int32_t id) { byte_token_[b] = id; }
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }
  size_t size() const { return count_; }
  // Call after the last add(): sizes the table (add() works before as well, just slower).
  void reserve(size_t n);

  // Appends the token ids of piece (raw bytes) to out.
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  // For tests: the two algorithms on their own (they must agree).
  void encode_linear(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_heap(std::string_view piece, std::vector<int32_t>& out) const;

  static constexpr size_t kLinearMax = 48;  // pieces up to this many bytes use the linear scan

 private:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t result = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  const Entry* find(int32_t l, int32_t r) const;
  void rehash(size_t capacity);

  std::vector<Entry> table_;  // open addressing, linear probing, power-of-two capacity
  size_t count_ = 0;
  std::array<int32_t, 256> byte_token_{};
};

}  // namespace tandem::text
