// Small generated models for tests (see qwen35_generator.h).
//
// ensure_tiny_model("Q4_K_M") returns the path of TANDEM_BINARY_DIR/test-models/
// qwen35-tiny-v<version>-Q4_K_M.gguf, generating it on first use. Files are cached on disk by
// name; the name carries kTinyModelVersion, which must be bumped whenever the generator's
// output changes (qwen35_generator_test checks that the cached file equals a fresh build).
#pragma once

#include <string>

#include "model/test_paths.h"

namespace tandem {

constexpr int kTinyModelVersion = 1;

// File name (no directory) of the cached tiny model.
std::string tiny_model_filename(const std::string& ftype, bool mtp = true);

// Generates the tiny preset (seed 42, built-in vocabulary) with the given ftype into dir unless
// the file already exists; returns its path. Safe to call from concurrent test processes
// (each writes a private temporary file and renames it into place). Throws on failure.
std::string ensure_tiny_model_in(const std::string& dir, const std::string& ftype, bool mtp = true);

inline std::string ensure_tiny_model(const std::string& ftype, bool mtp = true) {
  return ensure_tiny_model_in(std::string(TANDEM_BINARY_DIR) + "/test-models", ftype, mtp);
}

// The same for the other hybrids' test presets (model/hybrid_generator.h: "lfm2-tiny",
// "granite-tiny"), seed 42: TANDEM_BINARY_DIR/test-models/<preset>-v<version>-<ftype>.gguf.
constexpr int kHybridTestModelVersion = 2;
std::string ensure_hybrid_model(const std::string& preset, const std::string& ftype);

}  // namespace tandem
