// Seeded random weights for the generated model files (qwen35 and mmproj): a counter-based
// splitmix64 stream with Box-Muller normals, so every value is a pure function of (seed, tensor
// name, element index) — the same bytes on every machine and thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace tandem::seeded_random {

// Deterministic random numbers: counter-based splitmix64.
// Element stream k of a tensor is mix(tensor_seed + (k + 1)·γ), i.e. the k-th output of a
// splitmix64 generator seeded with tensor_seed, computable independently per element so
// threads can fill any row range and get the same bytes.

inline constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

inline uint64_t tensor_seed(uint64_t seed, std::string_view name) { return mix64(mix64(seed) ^ fnv1a64(name)); }

// Uniform in [0, 1) with 53 random bits.
inline double u01(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// Standard normal for element i: Box–Muller on the pair (2p+1, 2p+2) of the stream, p = i/2;
// even i takes the cosine branch, odd i the sine branch.
inline double normal_at(uint64_t ts, int64_t i) {
  const uint64_t p = static_cast<uint64_t>(i >> 1);
  const double u1 = 1.0 - u01(mix64(ts + (2 * p + 1) * kGamma));  // (0, 1]
  const double u2 = u01(mix64(ts + (2 * p + 2) * kGamma));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 6.283185307179586476925 * u2;
  return (i & 1) ? r * std::sin(a) : r * std::cos(a);
}

inline double uniform_at(uint64_t ts, int64_t i) { return u01(mix64(ts + (static_cast<uint64_t>(i) + 1) * kGamma)); }

// dst[k] = add + mul · normal_at(ts, first + k) for k < n, computing each Box–Muller pair once.
inline void fill_normals(uint64_t ts, int64_t first, int64_t n, double mul, double add, float* dst) {
  int64_t k = 0;
  if (n > 0 && (first & 1)) {
    dst[k] = static_cast<float>(add + mul * normal_at(ts, first));
    ++k;
  }
  for (; k + 1 < n; k += 2) {
    const uint64_t p = static_cast<uint64_t>((first + k) >> 1);
    const double u1 = 1.0 - u01(mix64(ts + (2 * p + 1) * kGamma));
    const double u2 = u01(mix64(ts + (2 * p + 2) * kGamma));
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double a = 6.283185307179586476925 * u2;
    dst[k] = static_cast<float>(add + mul * (r * std::cos(a)));
    dst[k + 1] = static_cast<float>(add + mul * (r * std::sin(a)));
  }
  if (k < n) dst[k] = static_cast<float>(add + mul * normal_at(ts, first + k));
}

}  // namespace tandem::seeded_random
