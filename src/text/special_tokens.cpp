#include "text/special_tokens.h"

#include <algorithm>
#include <cstring>

namespace tandem::text {

SpecialTokenMatcher::SpecialTokenMatcher(const std::vector<SpecialToken>& specials) : tokens_(specials) {
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const SpecialToken& a, const SpecialToken& b) { return a.text.size() > b.text.size(); });
  for (size_t i = 0; i < tokens_.size(); ++i)
    by_first_byte_[static_cast<uint8_t>(tokens_[i].text[0])].push_back(static_cast<uint32_t>(i));
}

SpecialTokenMatcher::Match SpecialTokenMatcher::find(std::string_view text, size_t from, bool include_control) const {
  for (size_t p = from; p < text.size(); ++p) {
    const auto& cands = by_first_byte_[static_cast<uint8_t>(text[p])];
    if (cands.empty()) continue;
    const size_t rest = text.size() - p;
    for (uint32_t c : cands) {
      const SpecialToken& t = tokens_[c];
      if (!include_control && t.type == TokenType::Control) continue;
      if (t.text.size() <= rest && std::memcmp(text.data() + p, t.text.data(), t.text.size()) == 0)
        return Match{p, t.text.size(), t.id};
    }
  }
  return Match{text.size(), 0, -1};
}

}  // namespace tandem::text
