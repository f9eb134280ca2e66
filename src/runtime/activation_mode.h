// How activations meet a non-F32 weight in the matrix products: the choice a model's users make
// (tandem-logits --activations, the accuracy tests) and the kernels carry out (kernels/matmul/
// matmul.h, KernelContext::activations). A header of its own, beside the CPU tier, so that the
// model seam (model/hybrid_model.h) can take it without exposing any kernel type.
//  Converted: each activation row is converted to the weight's vec_dot_type first (F16,
//    Q8_0 or Q8_K), as ggml-cpu does; the integer kernels need it and llama.cpp's logits
//    carry its rounding (the golden README's "ref B").
//  Exact: the weight rows are dequantized to float and the float activations are used as
//    they are (the README's "ref A": what quantized weights alone do to the numbers).
#pragma once

namespace tandem {

enum class ActivationMode { Converted, Exact };

}  // namespace tandem
