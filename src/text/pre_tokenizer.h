// The split step of byte-level BPE: cuts a text section into pieces that BPE encodes separately.
//
// Implements the Qwen2, Qwen3.5 and LLAMA3 regexes (spec qwen35.md §2.2, hybrids.md A8) by hand,
// alternative by alternative, with the semantics of a backtracking engine (leftmost alternative
// wins, greedy quantifiers, \s+(?!\S)):
//
//   qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}
//           | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//   qwen35: the same with \p{M} added to the letter runs: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and
//           ` ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*`.
//   llama3: qwen2 with digit runs of up to three: \p{N}{1,3} (LFM2's and Granite-4.0's files).
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

enum class PreTokenizerKind { Qwen2, Qwen35, Llama3 };

// What a tokenizer.ggml.pre name means, as llama.cpp's llama_vocab::load reads it:
//   qwen2                              Qwen2 regex
//   qwen35                             Qwen3.5 regex
//   llama3, llama-v3, llama-bpe, lfm2  LLAMA3 regex, ignore_merges, BOS added by default
//   dbrx                               LLAMA3 regex, ordinary merges, no BOS by default
// ignore_merges: a pre-token whose byte-level text is itself a vocabulary entry is emitted as that
// token without running the merges. add_bos is the default only: tokenizer.ggml.add_bos_token, when
// the file has it, decides (as in llama.cpp).
struct PreTokenizerRules {
  PreTokenizerKind kind = PreTokenizerKind::Qwen2;
  bool ignore_merges = false;
  bool add_bos = false;
};

// False for a name Tandem does not implement.
bool pre_tokenizer_rules(std::string_view name, PreTokenizerRules& out);
// For error messages: "qwen2, qwen35, llama3, llama-v3, llama-bpe, lfm2, dbrx".
const char* supported_pre_tokenizer_names();
// Kind only (the rules' kind); false for an unknown name.
bool pre_tokenizer_from_name(std::string_view name, PreTokenizerKind& out);

// Appends [begin, end) code-point ranges covering all of cps, in order.
void pre_tokenize(PreTokenizerKind kind, std::span<const uint32_t> cps,
                  std::vector<std::pair<uint32_t, uint32_t>>& pieces);

}  // namespace tandem::text
