// The parsed rules flattened into one array of elements, in the form the matcher walks: a parse
// stack holds positions into this array (llama.cpp keeps element pointers), each rule's
// alternatives are listed by their first position, and every character class (a literal's
// characters too) is resolved once into sorted, merged code-point ranges.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "grammar/gbnf_parser.h"

namespace tandem::grammar {

// A set of code points: sorted, disjoint, non-adjacent closed ranges (negated classes are
// complemented over U+0000..U+10FFFF when built), with a bitmap for ASCII.
struct CodePointSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  uint64_t ascii[2] = {0, 0};
  bool satisfiable = false;  // contains some Unicode scalar value (not only surrogates / > U+10FFFF)

  bool contains(uint32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1u;
    size_t lo = 0, hi = ranges.size();
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (ranges[mid].second < cp) lo = mid + 1;
      else hi = mid;
    }
    return lo < ranges.size() && ranges[lo].first <= cp;
  }
  bool intersects(uint32_t a, uint32_t b) const;   // some code point of [a, b]
  bool contains_all(uint32_t a, uint32_t b) const;  // every code point of [a, b]
  static CodePointSet from_ranges(std::vector<std::pair<uint32_t, uint32_t>> r, bool negate);
};

struct Program {
  std::vector<ElemType> type;    // by position
  std::vector<uint32_t> value;   // by position
  std::vector<uint32_t> next;    // the position after the symbol that starts here
  std::vector<int32_t> cls;      // class index of a class start (Char/CharNot/CharAny), else -1
  std::vector<uint32_t> alt_begin;  // by rule: its alternatives are alts[alt_begin[r] .. alt_begin[r+1])
  std::vector<uint32_t> alts;       // first position of each alternative (End/Alt when empty)
  std::vector<CodePointSet> classes;
  uint32_t root = 0;

  bool end_of_sequence(uint32_t pos) const { return type[pos] == ElemType::End || type[pos] == ElemType::Alt; }
  bool is_class(uint32_t pos) const { return cls[pos] >= 0; }
  size_t bytes() const;

  static Program build(const ParsedGrammar& g);
};

}  // namespace tandem::grammar
