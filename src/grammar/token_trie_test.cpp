#include "grammar/token_trie.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace tandem::grammar {
namespace {

TEST(TokenTrie, DepthFirstLayoutAndFind) {
  const std::vector<std::pair<int32_t, std::string_view>> toks = {
      {0, "a"}, {1, "ab"}, {2, "abc"}, {3, "b"}, {4, "ba"}, {5, "\xE4\xB8"}, {6, "ab"}, {7, "xyz"}};
  const TokenTrie t(toks);
  EXPECT_EQ(t.n_tokens(), toks.size());
  // a, ab, abc, b, ba, x, xy, xyz, E4, E4 B8 -> 10 nodes
  EXPECT_EQ(t.size(), 10u);
  const uint32_t ab = t.find("ab");
  ASSERT_NE(ab, TokenTrie::kNoToken);
  const auto& n = t.nodes()[ab];
  EXPECT_TRUE(n.token == 1 || n.token == 6);
  EXPECT_EQ(n.more, 1);
  ASSERT_EQ(t.duplicates(ab).size(), 1u);
  EXPECT_EQ(t.duplicates(ab)[0] + static_cast<int32_t>(n.token), 7);
  EXPECT_EQ(t.find("xy") != TokenTrie::kNoToken, true);
  EXPECT_EQ(t.nodes()[t.find("xy")].token, TokenTrie::kNoToken);
  EXPECT_EQ(t.find("abd"), TokenTrie::kNoToken);
  EXPECT_EQ(t.find("c"), TokenTrie::kNoToken);
  EXPECT_EQ(t.nodes()[t.find("\xE4\xB8")].token, 5u);
}

// Walking every node and rebuilding the path from depths gives back exactly the token set, and
// each skip points past its subtree.
TEST(TokenTrie, RandomTokensRoundTrip) {
  std::mt19937_64 rng(3);
  std::vector<std::string> store;
  std::set<std::string> uniq;
  while (store.size() < 2000) {
    std::string s;
    const size_t len = 1 + rng() % 9;
    for (size_t i = 0; i < len; ++i) s += static_cast<char>("ab\xC3\xA9z"[rng() % 5]);
    if (uniq.insert(s).second) store.push_back(s);
  }
  std::vector<std::pair<int32_t, std::string_view>> toks;
  for (size_t i = 0; i < store.size(); ++i) toks.emplace_back(static_cast<int32_t>(i), store[i]);
  const TokenTrie t(toks);
  std::string path;
  std::map<std::string, int32_t> seen;
  const auto nodes = t.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    path.resize(nodes[i].depth - 1u);
    path += static_cast<char>(nodes[i].byte);
    if (nodes[i].token != TokenTrie::kNoToken) seen[path] = static_cast<int32_t>(nodes[i].token);
    ASSERT_GT(nodes[i].skip, i);
    for (uint32_t j = i + 1; j < nodes[i].skip; ++j) ASSERT_GT(nodes[j].depth, nodes[i].depth);
    if (nodes[i].skip < nodes.size()) ASSERT_LE(nodes[nodes[i].skip].depth, nodes[i].depth);
  }
  ASSERT_EQ(seen.size(), store.size());
  for (size_t i = 0; i < store.size(); ++i) EXPECT_EQ(seen[store[i]], static_cast<int32_t>(i));
}

}  // namespace
}  // namespace tandem::grammar
