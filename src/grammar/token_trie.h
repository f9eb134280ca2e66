// The normal tokens' bytes in one flat trie, nodes in depth-first order, so that a token mask
// is one linear walk: at each node the grammar's byte transition from the parent's state says
// whether to descend (next node) or skip the whole subtree (jump to `skip`). Special tokens
// (control, user-defined, unused rows, empty bytes) are not in the trie: the grammar reaches
// them only through token terminals (spec/constrained.md §6.3).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::grammar {

class TokenTrie {
 public:
  static constexpr uint32_t kNoToken = 0xFFFFFFFFu;

  struct Node {
    uint32_t token;  // the token whose bytes end here, or kNoToken
    uint32_t skip;   // index of the first node after this subtree
    uint16_t depth;  // 1 for the children of the (implicit) root: the byte is the depth-th byte
    uint8_t byte;
    uint8_t more;    // 1: more tokens with the same bytes, in duplicates() (duplicates are rare)
  };

  // tokens: (id, bytes) of the tokens to index; bytes must be non-empty and at most 65535 long.
  explicit TokenTrie(std::span<const std::pair<int32_t, std::string_view>> tokens);

  std::span<const Node> nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }
  // The other tokens with the same bytes as node i's token (when nodes()[i].more).
  std::span<const int32_t> duplicates(uint32_t node) const;
  // The node whose path spells `bytes`, or kNoToken.
  uint32_t find(std::string_view bytes) const;
  size_t bytes() const { return nodes_.capacity() * sizeof(Node) + extra_nodes_.capacity() * 8; }
  size_t n_tokens() const { return n_tokens_; }
  uint16_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<uint32_t> extra_nodes_;  // sorted; extra_ids_[i] has the bytes of node extra_nodes_[i]
  std::vector<int32_t> extra_ids_;
  size_t n_tokens_ = 0;
  uint16_t max_depth_ = 0;
};

}  // namespace tandem::grammar
