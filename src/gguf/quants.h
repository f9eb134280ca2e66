// Block formats of the quantized GGUF types: dequantization (bit-exact with
// ggml/gguf-py) and reference quantization (ggml's quantize_row_*_ref).
//
// These are the plain scalar definitions; fast kernels live in kernels/ and are
// tested against these.
#pragma once

#include <cstdint>

#include "gguf/ggml_type.h"

namespace tandem {

// Block layouts, byte-compatible with ggml.
constexpr int kQK = 32;     // elements per legacy block (Q4_0 ... Q8_1)
constexpr int kQK_K = 256;  // elements per K-quant super-block
constexpr int kKScaleBytes = 12;

#pragma pack(push, 1)
struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK / 2]; };
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[kQK / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[kQK / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK]; };
struct BlockQ8_1 { uint16_t d; uint16_t s; int8_t qs[kQK]; };  // s = d * sum(qs)
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qs[kQK_K / 2]; };
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qh[kQK_K / 8]; uint8_t qs[kQK_K / 2]; };
struct BlockQ6_K { uint8_t ql[kQK_K / 2]; uint8_t qh[kQK_K / 4]; int8_t scales[kQK_K / 16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[kQK_K]; int16_t bsums[kQK_K / 16]; };
#pragma pack(pop)

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block, packed in
// its 12 scale bytes. static: it is also compiled into the SIMD-only translation units,
// which must not export any symbol other units could pick up.
static inline void k4_scale_min(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Dequantize n elements (a multiple of the type's block size) of type t from src to dst.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

// Quantize n elements with ggml's reference quantizer for type t (every supported type,
// including Q8_1 and Q8_K). dst must hold row_bytes(t, n) bytes.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

// Converts an F32 activation row to `vec_dot_type` exactly as ggml-cpu on x86 (AVX2/AVX-512 builds,
// i.e. how the golden logits were made) does before a dot product with a weight row:
//   F32: copy; F16/BF16: round to nearest even (as quantize_row);
//   Q8_0/Q8_1: the SIMD rule d = fp16(amax/127), q = round-half-even(x * (127/amax)), which differs from
//              quantize_row's *_ref rule (x * (1/(amax/127)), roundf) in the last bit of rare values;
//   Q8_K: quantize_row (ggml-cpu x86 uses the reference quantizer).
// dst must hold row_bytes(vec_dot_type, n) bytes.
void quantize_row_activation(GgmlType vec_dot_type, const float* src, void* dst, int64_t n);

}  // namespace tandem
