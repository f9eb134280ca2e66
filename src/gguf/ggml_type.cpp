// Type traits of the supported ggml tensor types and scalar half/bfloat conversions.
#include "gguf/ggml_type.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "gguf/quants.h"

namespace tandem {
namespace {

constexpr std::array<GgmlTypeTraits, 13> kTraits = {{
    {GgmlType::F32, "F32", 1, 4, GgmlType::F32},
    {GgmlType::F16, "F16", 1, 2, GgmlType::F16},
    {GgmlType::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0), GgmlType::Q8_0},
    {GgmlType::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1), GgmlType::Q8_1},
    {GgmlType::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0), GgmlType::Q8_0},
    {GgmlType::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1), GgmlType::Q8_1},
    {GgmlType::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0), GgmlType::Q8_0},
    {GgmlType::Q8_1, "Q8_1", kQK, sizeof(BlockQ8_1), GgmlType::Q8_1},
    {GgmlType::Q4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), GgmlType::Q8_K},
    {GgmlType::Q5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), GgmlType::Q8_K},
    {GgmlType::Q6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), GgmlType::Q8_K},
    {GgmlType::Q8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), GgmlType::Q8_K},
    {GgmlType::BF16, "BF16", 1, 2, GgmlType::BF16},
}};

const GgmlTypeTraits* find_traits(uint32_t raw) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw) return &t;
  }
  return nullptr;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t raw_type) {
  const GgmlTypeTraits* t = find_traits(raw_type);
  if (!t) return std::nullopt;
  return *t;
}

const GgmlTypeTraits& traits(GgmlType t) {
  const GgmlTypeTraits* p = find_traits(static_cast<uint32_t>(t));
  if (!p) throw std::invalid_argument("unsupported ggml type id " + std::to_string(static_cast<uint32_t>(t)));
  return *p;
}

const char* ggml_type_name(GgmlType t) {
  const GgmlTypeTraits* p = find_traits(static_cast<uint32_t>(t));
  return p ? p->name : "unknown";
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    std::string_view n = t.name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size(); ++i) {
      char a = n[i], b = name[i];
      if (a >= 'a' && a <= 'z') a = static_cast<char>(a - 'a' + 'A');
      if (b >= 'a' && b <= 'z') b = static_cast<char>(b - 'a' + 'A');
      if (a != b) {
        eq = false;
        break;
      }
    }
    if (eq) return t.type;
  }
  return std::nullopt;
}

const char* ggml_known_type_name(uint32_t raw_type) {
  // Every type id ggml has defined (including the ones this engine does not support).
  switch (raw_type) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 4: return "Q4_2 (removed)";
    case 5: return "Q4_3 (removed)";
    case 6: return "Q5_0";
    case 7: return "Q5_1";
    case 8: return "Q8_0";
    case 9: return "Q8_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 12: return "Q4_K";
    case 13: return "Q5_K";
    case 14: return "Q6_K";
    case 15: return "Q8_K";
    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS";
    case 18: return "IQ3_XXS";
    case 19: return "IQ1_S";
    case 20: return "IQ4_NL";
    case 21: return "IQ3_S";
    case 22: return "IQ2_S";
    case 23: return "IQ4_XS";
    case 24: return "I8";
    case 25: return "I16";
    case 26: return "I32";
    case 27: return "I64";
    case 28: return "F64";
    case 29: return "IQ1_M";
    case 30: return "BF16";
    case 34: return "TQ1_0";
    case 35: return "TQ2_0";
    case 39: return "MXFP4";
    default: return nullptr;
  }
}

size_t row_bytes(GgmlType t, int64_t n) {
  const GgmlTypeTraits& tr = traits(t);
  if (n < 0 || n % tr.block_elems != 0) {
    throw std::invalid_argument(std::string("row_bytes: ") + std::to_string(n) + " elements is not a multiple of the " +
                                tr.name + " block size " + std::to_string(tr.block_elems));
  }
  const uint64_t blocks = static_cast<uint64_t>(n / tr.block_elems);
  if (blocks != 0 && tr.block_bytes > std::numeric_limits<size_t>::max() / blocks) {
    throw std::invalid_argument("row_bytes: " + std::to_string(n) + " elements of " + tr.name + " overflow size_t");
  }
  return static_cast<size_t>(blocks) * tr.block_bytes;
}

// IEEE half <-> single, as ggml's scalar reference (round to nearest even; NaN → quiet NaN).
float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {
    // Inf, or NaN with its payload kept and made quiet (what ggml's scalar and F16C paths produce).
    return float_of(sign | 0x7F800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
  }
  if (exp == 0) {
    // Zero or subnormal: exactly mant * 2^-24.
    const float v = static_cast<float>(mant) * 0x1.0p-24f;
    return float_of(sign | bits_of(v));
  }
  return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
  // The branch-free reference conversion ggml uses without F16C; identical to the hardware
  // conversion with round-to-nearest-even for every non-NaN input.
  const float scale_to_inf = float_of(0x77800000u);   // 2^112
  const float scale_to_zero = float_of(0x08800000u);  // 2^-110
  const uint32_t w = bits_of(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  if (shl1_w > 0xFF000000u) return static_cast<uint16_t>((sign >> 16) | 0x7E00u);  // NaN
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | nonsign);
}

float bf16_to_fp32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 64u);  // NaN: force quiet
  return static_cast<uint16_t>((u + (0x7FFFu + ((u >> 16) & 1u))) >> 16);
}

}  // namespace tandem
