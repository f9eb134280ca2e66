// The one place that knows every architecture Tandem runs: general.architecture picks the model
// class (model/hybrid_model.h). A file of any other architecture, or of a variant an
// architecture's loader does not support, is refused here with a GgufError that names it and
// what is supported.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/forward_pass.h"
#include "model/hybrid_model.h"
#include "model/model_shape.h"

namespace tandem {

// The architectures load_model accepts, in the order the error message lists them.
const std::vector<std::string>& supported_architectures();

// Opens, validates and binds a model file of a supported architecture.
std::unique_ptr<HybridModel> load_model(const std::string& path, const LoadOptions& opt);

// The shape of a model file without binding its weights (the replay model, tandem-sim).
ModelShape read_model_shape(const GgufFile& file);

}  // namespace tandem
