// Conversion of an activation row to the type a weight's dot product consumes
// (ggml's vec_dot_type): F16/BF16 rounding, Q8_0, Q8_1 or Q8_K blocks.
//
// These follow ggml-cpu's *run-time* quantizers (not the _ref ones used for weights):
// Q8_0/Q8_1 use id = 127/amax and round half to even, as the AVX path does. Matching
// them is what lets quantized files reproduce llama.cpp's logits (golden "ref B").
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "runtime/cpu_tier.h"

namespace tandem::kernels {

// Bytes needed to hold n activations converted to type t.
size_t activation_bytes(GgmlType t, int64_t n);

// Converts n floats (n a multiple of t's block size) to type t. t is a vec_dot_type:
// F32 (copy), F16, BF16, Q8_0, Q8_1 or Q8_K. tier: the caller's kernel tier (Q8_K has an
// AVX-512 body; every tier writes the same bytes).
void quantize_activation(CpuTier tier, GgmlType t, const float* x, void* dst, int64_t n);

}  // namespace tandem::kernels
