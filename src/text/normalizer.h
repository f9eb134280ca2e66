// Unicode NFC normalization of text sections before pre-tokenization.
//
// Qwen's tokenizer.json has normalizer {"type": "NFC"}; GGUF files do not record the normalizer
// (llama.cpp skips it), but the reference tokenizer applies it, so Tandem does too (on by default,
// TokenizerOptions::nfc). Implemented with ICU's NFC instance.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::text {

// Normalizes cps in place to NFC. Returns true if anything changed. Text made only of code points
// below U+0300 is NFC already and returns immediately (the common case for ASCII/Latin-1 prompts).
bool nfc_normalize(std::vector<uint32_t>& cps);

}  // namespace tandem::text
