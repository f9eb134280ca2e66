// The split step of byte-level BPE: cuts a text section into pieces that BPE encodes separately.
//
// Implements the Qwen2 and Qwen3.5 regexes (spec §2.2) by hand, alternative by alternative, with the
// semantics of a backtracking engine (leftmost alternative wins, greedy quantifiers, \s+(?!\S)):
//
//   qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}
//           | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//   qwen35: the same with \p{M} added to the letter runs: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and
//           ` ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*`.
//
// The case-insensitive contraction group is ASCII-only, as in the reference (transformers.js
// rewrites it to '([sS]|[tT]|[rR][eE]|...) because JavaScript has no (?i:...)).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::text {

enum class PreTokenizerKind { Qwen2, Qwen35 };

// "qwen2" / "qwen35" (tokenizer.ggml.pre); nullopt-like false for anything else.
bool pre_tokenizer_from_name(std::string_view name, PreTokenizerKind& out);

// Appends [begin, end) code-point ranges covering all of cps, in order.
void pre_tokenize(PreTokenizerKind kind, std::span<const uint32_t> cps,
                  std::vector<std::pair<uint32_t, uint32_t>>& pieces);

}  // namespace tandem::text
