#include "grammar/token_trie.h"

#include <algorithm>
#include <stdexcept>

namespace tandem::grammar {

TokenTrie::TokenTrie(std::span<const std::pair<int32_t, std::string_view>> tokens) {
  // Sorting the byte strings gives the depth-first order directly: each token adds the nodes of
  // the part that is not a prefix shared with the previous token.
  std::vector<std::pair<std::string_view, int32_t>> sorted;
  sorted.reserve(tokens.size());
  for (const auto& [id, b] : tokens) {
    if (b.empty() || b.size() > 0xFFFF) throw std::invalid_argument("TokenTrie: token bytes must be 1..65535 long");
    sorted.emplace_back(b, id);
  }
  std::sort(sorted.begin(), sorted.end());
  n_tokens_ = sorted.size();
  nodes_.reserve(sorted.size() * 2);
  std::vector<uint32_t> path;  // node index at each depth of the previous token
  std::string_view prev;
  for (const auto& [b, id] : sorted) {
    size_t common = 0;
    while (common < prev.size() && common < b.size() && prev[common] == b[common]) ++common;
    if (common == b.size() && b.size() == prev.size()) {  // same bytes as the previous token
      nodes_[path.back()].more = 1;
      extra_nodes_.push_back(path.back());
      extra_ids_.push_back(id);
      continue;
    }
    // Close the subtrees of the previous path below the common prefix.
    while (path.size() > common) {
      nodes_[path.back()].skip = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < b.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(Node{kNoToken, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(b[d]), 0});
    }
    nodes_.back().token = static_cast<uint32_t>(id);
    prev = b;
  }
  while (!path.empty()) {
    nodes_[path.back()].skip = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
  for (const Node& n : nodes_) max_depth_ = std::max(max_depth_, n.depth);
  nodes_.shrink_to_fit();
}

std::span<const int32_t> TokenTrie::duplicates(uint32_t node) const {
  // extra_nodes_ is sorted: duplicates are appended while their node is the newest one.
  const auto lo = std::lower_bound(extra_nodes_.begin(), extra_nodes_.end(), node);
  const auto hi = std::upper_bound(lo, extra_nodes_.end(), node);
  return std::span<const int32_t>(extra_ids_).subspan(static_cast<size_t>(lo - extra_nodes_.begin()),
                                                       static_cast<size_t>(hi - lo));
}

uint32_t TokenTrie::find(std::string_view bytes) const {
  uint32_t i = 0;
  const uint32_t n = static_cast<uint32_t>(nodes_.size());
  uint32_t end = n;
  uint32_t found = kNoToken;
  for (size_t d = 0; d < bytes.size(); ++d) {
    const uint8_t want = static_cast<uint8_t>(bytes[d]);
    found = kNoToken;
    while (i < end) {
      if (nodes_[i].byte == want) {
        found = i;
        break;
      }
      i = nodes_[i].skip;
    }
    if (found == kNoToken) return kNoToken;
    end = nodes_[found].skip;
    i = found + 1;
  }
  return found;
}

}  // namespace tandem::grammar
