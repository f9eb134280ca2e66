// Tensor storage types of GGUF files (ggml's type ids) and their block layouts.
//
// Every quantized type stores a row as a sequence of fixed-size blocks; a row's
// length must be a multiple of the block's element count. The ids are the ones
// written in GGUF files, so they must never be renumbered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct GgmlTypeTraits {
  GgmlType type;
  const char* name;       // "Q4_K", as llama.cpp prints it
  int64_t block_elems;    // elements per block (1 for F32/F16/BF16)
  size_t block_bytes;     // bytes per block
  GgmlType vec_dot_type;  // what ggml-cpu converts activations to before a dot with this weight type
};

// Traits of a type this engine supports; std::nullopt for any other id (unknown or unsupported).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_type);
const GgmlTypeTraits& traits(GgmlType t);  // t must be a supported type
const char* ggml_type_name(GgmlType t);
std::optional<GgmlType> ggml_type_from_name(std::string_view name);  // "q4_0", "Q4_K", "f16", ...
// Name of any type id ggml has ever defined ("Q2_K", "IQ4_NL", ...), supported or not; nullptr if
// the id is not a ggml type at all. Used for error messages about unsupported tensor types.
const char* ggml_known_type_name(uint32_t raw_type);

// Bytes of one row of n elements; n must be a multiple of block_elems (else std::invalid_argument,
// also thrown when the byte count would overflow size_t).
size_t row_bytes(GgmlType t, int64_t n);

// Scalar half/bfloat conversions, bit-exact with ggml (round-to-nearest-even; NaN preserved).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace tandem
