#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include "grammar/grammar_test_vocab.h"

namespace tandem::grammar {
namespace {

using testing::vocab;

TEST(GrammarCache, HitsMissesAndErrors) {
  GrammarCache c(vocab().index, size_t{64} << 20);
  const auto a = c.get("root ::= \"a\"");
  const auto b = c.get("root ::= \"a\"");
  EXPECT_EQ(a.get(), b.get());
  const auto d = c.get("root ::= \"b\"");
  EXPECT_NE(a.get(), d.get());
  EXPECT_THROW(c.get("root ::= oops"), GrammarError);
  const auto s = c.stats();
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 3);
  EXPECT_GT(s.bytes, 0u);
}

TEST(GrammarCache, EvictsLeastRecentlyUsedOverBudget) {
  // Size one grammar, then give the cache room for about two.
  size_t one = 0;
  {
    GrammarCache probe(vocab().index, size_t{64} << 20);
    probe.get("root ::= \"x0\"");
    one = probe.stats().bytes;
  }
  GrammarCache c(vocab().index, one * 2 + one / 2);
  const auto g0 = c.get("root ::= \"x0\"");
  c.get("root ::= \"x1\"");
  c.get("root ::= \"x0\"");  // x0 is now the most recent
  c.get("root ::= \"x2\"");  // evicts x1
  EXPECT_EQ(c.stats().entries, 2u);
  const int64_t misses = c.stats().misses;
  c.get("root ::= \"x0\"");
  EXPECT_EQ(c.stats().misses, misses);  // still cached
  c.get("root ::= \"x1\"");
  EXPECT_EQ(c.stats().misses, misses + 1);  // was evicted
  // An evicted grammar still in use stays valid.
  EXPECT_NE(g0->initial(), kDeadState);
}

}  // namespace
}  // namespace tandem::grammar
