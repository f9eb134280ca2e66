#include "text/pre_tokenizer.h"

#include "text/unicode_classes.h"

namespace tandem::text {

bool pre_tokenizer_rules(std::string_view name, PreTokenizerRules& out) {
  if (name == "qwen2") {
    out = {PreTokenizerKind::Qwen2, false, false};
  } else if (name == "qwen35") {
    out = {PreTokenizerKind::Qwen35, false, false};
  } else if (name == "llama3" || name == "llama-v3" || name == "llama-bpe" || name == "lfm2") {
    out = {PreTokenizerKind::Llama3, true, true};
  } else if (name == "dbrx") {
    out = {PreTokenizerKind::Llama3, false, false};
  } else {
    return false;
  }
  return true;
}

const char* supported_pre_tokenizer_names() { return "qwen2, qwen35, llama3, llama-v3, llama-bpe, lfm2, dbrx"; }

bool pre_tokenizer_from_name(std::string_view name, PreTokenizerKind& out) {
  PreTokenizerRules r;
  if (!pre_tokenizer_rules(name, r)) return false;
  out = r.kind;
  return true;
}

namespace {

// Length (1..3 including the apostrophe) of a contraction at cps[i] == '\'', or 0.
size_t contraction_len(std::span<const uint32_t> cps, size_t i) {
  const size_t n = cps.size();
  auto lower = [&](size_t k) -> uint32_t {
    if (k >= n) return 0;
    const uint32_t c = cps[k];
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  };
  const uint32_t a = lower(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const uint32_t b = lower(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

void pre_tokenize(PreTokenizerKind kind, std::span<const uint32_t> cps,
                  std::vector<std::pair<uint32_t, uint32_t>>& pieces) {
  const size_t n = cps.size();
  // "Letter run" class: \p{L} for qwen2, [\p{L}\p{M}] for qwen35.
  const uint8_t run_mask = kind == PreTokenizerKind::Qwen35 ? (kLetter | kMark) : kLetter;
  auto flags = [&](size_t k) -> uint8_t { return k < n ? code_point_flags(cps[k]) : 0; };
  auto is_run = [&](size_t k) { return k < n && (flags(k) & run_mask); };
  auto is_crlf = [&](size_t k) { return k < n && (cps[k] == '\r' || cps[k] == '\n'); };
  // [^\s\p{L}(\p{M})\p{N}]: punctuation, symbols, controls ... (marks excluded for qwen35).
  auto is_other = [&](size_t k) {
    return k < n && !(flags(k) & (kWhitespace | run_mask | kNumber));
  };

  size_t i = 0;
  while (i < n) {
    const uint32_t c = cps[i];
    const uint8_t f = flags(i);
    size_t end = i;

    // 1. contractions
    if (c == '\'') {
      const size_t len = contraction_len(cps, i);
      if (len) end = i + len;
    }
    // 2. [^\r\n\p{L}\p{N}]?LETTERS+  (the optional prefix is tried first, greedy)
    if (end == i) {
      const bool prefix_ok = c != '\r' && c != '\n' && !(f & (kLetter | kNumber));
      size_t j = i;
      if (prefix_ok && is_run(i + 1)) j = i + 1;
      else if (f & run_mask) j = i;
      else j = n + 1;  // no match
      if (j <= n) {
        while (is_run(j)) ++j;
        end = j;
      }
    }
    // 3. \p{N}: exactly one digit/number (llama3: \p{N}{1,3}, greedy)
    if (end == i && (f & kNumber)) {
      end = i + 1;
      if (kind == PreTokenizerKind::Llama3)
        while (end < n && end - i < 3 && (flags(end) & kNumber)) ++end;
    }
    // 4. ' '?OTHER+[\r\n]*
    if (end == i) {
      size_t j = i;
      if (c == ' ' && is_other(i + 1)) j = i + 1;
      if (is_other(j)) {
        while (is_other(j)) ++j;
        while (is_crlf(j)) ++j;
        end = j;
      }
    }
    // 5-7. whitespace runs
    if (end == i && (f & kWhitespace)) {
      size_t e = i;
      size_t last_crlf = n;  // index of the last \r or \n inside the run
      while (e < n && (flags(e) & kWhitespace)) {
        if (cps[e] == '\r' || cps[e] == '\n') last_crlf = e;
        ++e;
      }
      if (last_crlf != n) {
        end = last_crlf + 1;  // \s*[\r\n]+ : greedy \s* backtracks to the last line break
      } else if (e == n || e - i == 1) {
        end = e;  // \s+(?!\S) at the end of text, or the single-space fallback \s+
      } else {
        end = e - 1;  // \s+(?!\S): leave one space to be the prefix of the next word
      }
    }
    // No alternative can fail on a non-empty input, but never loop forever if one did.
    if (end == i) end = i + 1;
    pieces.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(end));
    i = end;
  }
}

}  // namespace tandem::text
