#include "grammar/grammar_program.h"

#include <algorithm>

namespace tandem::grammar {

namespace {
constexpr uint32_t kMaxCp = 0x10FFFF;
}

bool CodePointSet::intersects(uint32_t a, uint32_t b) const {
  // First range whose end is >= a.
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), a,
                                   [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= b;
}

bool CodePointSet::contains_all(uint32_t a, uint32_t b) const {
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), a,
                                   [](const std::pair<uint32_t, uint32_t>& r, uint32_t v) { return r.second < v; });
  return it != ranges.end() && it->first <= a && it->second >= b;
}

CodePointSet CodePointSet::from_ranges(std::vector<std::pair<uint32_t, uint32_t>> r, bool negate) {
  std::erase_if(r, [](const auto& x) { return x.first > x.second; });  // llama.cpp: [b-a] matches nothing
  std::sort(r.begin(), r.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& x : r) {
    if (!merged.empty() && x.first <= merged.back().second + 1 && merged.back().second != UINT32_MAX) {
      merged.back().second = std::max(merged.back().second, x.second);
    } else if (!merged.empty() && merged.back().second == UINT32_MAX) {
      // already covers everything above
    } else {
      merged.push_back(x);
    }
  }
  CodePointSet s;
  if (negate) {
    uint32_t from = 0;
    for (const auto& x : merged) {
      if (x.first > kMaxCp) break;
      if (x.first > from) s.ranges.emplace_back(from, x.first - 1);
      if (x.second >= kMaxCp) {
        from = kMaxCp + 1;
        break;
      }
      from = x.second + 1;
    }
    if (from <= kMaxCp) s.ranges.emplace_back(from, kMaxCp);
  } else {
    s.ranges = std::move(merged);
  }
  for (const auto& x : s.ranges)
    for (uint32_t c = x.first; c <= std::min<uint32_t>(x.second, 127); ++c) s.ascii[c >> 6] |= uint64_t{1} << (c & 63);
  s.satisfiable = s.intersects(0, 0xD7FF) || s.intersects(0xE000, kMaxCp);
  return s;
}

Program Program::build(const ParsedGrammar& g) {
  Program p;
  p.root = g.root;
  std::vector<uint32_t> rule_start(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    rule_start[r] = static_cast<uint32_t>(p.type.size());
    for (const Element& e : g.rules[r]) {
      p.type.push_back(e.type);
      p.value.push_back(e.value);
    }
  }
  const size_t n = p.type.size();
  p.next.assign(n, 0);
  p.cls.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const ElemType t = p.type[i];
    if (t == ElemType::Char || t == ElemType::CharNot) {
      std::vector<std::pair<uint32_t, uint32_t>> r;
      size_t j = i;
      while (true) {
        const uint32_t lo = p.value[j];
        uint32_t hi = lo;
        if (j + 1 < n && p.type[j + 1] == ElemType::CharRngUpper) {
          hi = p.value[j + 1];
          ++j;
        }
        r.emplace_back(lo, hi);
        if (j + 1 < n && p.type[j + 1] == ElemType::CharAlt) {
          ++j;
          continue;
        }
        break;
      }
      p.cls[i] = static_cast<int32_t>(p.classes.size());
      p.classes.push_back(CodePointSet::from_ranges(std::move(r), t == ElemType::CharNot));
      p.next[i] = static_cast<uint32_t>(j + 1);
    } else if (t == ElemType::CharAny) {
      p.cls[i] = static_cast<int32_t>(p.classes.size());
      p.classes.push_back(CodePointSet::from_ranges({{0, kMaxCp}}, false));
      p.next[i] = static_cast<uint32_t>(i + 1);
    } else {
      p.next[i] = static_cast<uint32_t>(i + 1);
    }
  }
  p.alt_begin.reserve(g.rules.size() + 1);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    p.alt_begin.push_back(static_cast<uint32_t>(p.alts.size()));
    uint32_t pos = rule_start[r];
    while (true) {
      p.alts.push_back(pos);
      while (!p.end_of_sequence(pos)) pos = p.next[pos];
      if (p.type[pos] == ElemType::Alt) {
        ++pos;
        continue;
      }
      break;
    }
  }
  p.alt_begin.push_back(static_cast<uint32_t>(p.alts.size()));
  return p;
}

size_t Program::bytes() const {
  size_t b = type.capacity() + value.capacity() * 4 + next.capacity() * 4 + cls.capacity() * 4 + alt_begin.capacity() * 4 +
             alts.capacity() * 4;
  for (const auto& c : classes) b += sizeof(c) + c.ranges.capacity() * 8;
  return b;
}

}  // namespace tandem::grammar
