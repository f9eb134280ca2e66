// A qwen35 GGUF re-encoded with another file type, as llama-quantize does it: every metadata key
// copied (general.file_type and general.quantization_version set), every tensor decoded to F32
// and encoded with the type llama-quantize's rules pick (qwen35_tensor_type: 1-D tensors and
// ssm_conv1d stay F32, the tied head goes to Q6_K, the more-bits mix of *_M types, the fallbacks
// of rows that are not a multiple of the block), by the same reference quantizers the generator
// uses (gguf/quants.h). tandem-quantize is the command; the trainer's export runs it on the F16
// file written from the trained weights.
#pragma once

#include <optional>
#include <string>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/qwen35/qwen35_generator.h"

namespace tandem {

struct RequantizeOptions {
  Qwen35FType ftype;
  std::optional<GgmlType> output_type;  // the LM head's type, like llama-quantize --output-tensor-type
  int n_threads = 2;
};

struct RequantizeStats {
  std::string type_summary;  // "F32 40, Q4_0 30, Q6_K 1"
};

// Throws std::runtime_error naming the file when it is not a qwen35 model or its tensors are
// already quantized (as llama-quantize without --allow-requantize: quantizing twice loses more
// than once).
GgufWriter requantize_qwen35(const GgufFile& in, const RequantizeOptions& opt, RequantizeStats* stats = nullptr);

}  // namespace tandem
