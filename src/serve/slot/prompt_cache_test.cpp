// The host prompt cache (dry run): when the slot goes through it, which entry is loaded, and
// oldest-first eviction within the byte budget.
#include "serve/slot/prompt_cache.h"

#include <gtest/gtest.h>

#include "serve/policy/stock_policy.h"
#include "serve/serve_test_util.h"

namespace tandem::serve {
namespace {

using namespace testing;

constexpr size_t kBigCheckpoint = 300 * 1024;  // three of these per entry: a 1 MiB budget holds one entry

TEST(PromptCache, SavesUnrelatedSlotsAndLoadsTheBestEntry) {
  PromptCacheOptions opt;
  opt.budget_mib = 1;
  PromptCache cache(opt);
  auto slot = dry_slot(std::make_unique<StockPolicy>(), stock_slot(), kBigCheckpoint);
  slot->set_prompt_cache(&cache);

  const auto pa = cat({seg(1, 10), seg(2, 500)});
  const RequestStats s1 = request(*slot, pa, {10}, 5);
  EXPECT_FALSE(s1.prompt_cache_saved);  // the slot was empty
  EXPECT_EQ(s1.created_positions, (P{10, 506}));

  // Unrelated prompt: the slot (pa) is saved, nothing better to load.
  const RequestStats s2 = request(*slot, seg(3, 510), {0}, 5);
  EXPECT_TRUE(s2.prompt_cache_saved);
  EXPECT_FALSE(s2.prompt_cache_loaded);
  EXPECT_EQ(s2.prompt_cache_entries, 1);
  EXPECT_EQ(s2.restore_pos, 0);
  const size_t entry_a = kBigCheckpoint + 515 * kKvBytesPerToken + 2 * kBigCheckpoint;
  EXPECT_EQ(s2.prompt_cache_bytes, entry_a);
  EXPECT_EQ(s2.prompt_cache_budget_bytes, 1024u * 1024u);

  // Back to pa's prefix: the slot (the unrelated prompt) is saved, pa's entry is loaded with
  // its checkpoints, and the restore rule runs on it: L = 300, R = 10.
  const RequestStats s3 = request(*slot, cat({seg(1, 10), seg(2, 290), seg(4, 200)}), {10}, 5);
  EXPECT_TRUE(s3.prompt_cache_saved);
  EXPECT_TRUE(s3.prompt_cache_loaded);
  EXPECT_EQ(s3.lcp, 300);
  EXPECT_EQ(s3.restore_pos, 10);
  EXPECT_EQ(s3.dropped_positions, (P{506}));
  EXPECT_EQ(s3.prompt_cache_entries, 1);  // pa left the cache when it was loaded

  // Another unrelated prompt: the slot is saved, over budget: the oldest entry goes.
  const RequestStats s4 = request(*slot, seg(5, 100), {0});
  EXPECT_EQ(s4.prompt_cache_entries, 1);
  EXPECT_EQ(cache.evicted_total(), 1u);
  EXPECT_LE(cache.bytes_used(), cache.budget_bytes());
  EXPECT_EQ(cache.contents().front().tokens[0], 100000);  // the pa-prefixed prompt is the one kept
}

TEST(PromptCache, SimilarSlotsSkipTheCache) {
  PromptCache cache;
  EXPECT_TRUE(cache.should_update({}, seg(1, 10)));
  const auto a = seg(1, 100);
  auto b = seg(1, 60);
  const auto tail = seg(2, 40);
  b.insert(b.end(), tail.begin(), tail.end());
  EXPECT_FALSE(cache.should_update(a, b));                                  // keeps 60% of the slot
  EXPECT_TRUE(cache.should_update(a, cat({seg(1, 40), seg(2, 10)})));      // keeps 40% < 50%
  EXPECT_TRUE(cache.should_update(a, cat({seg(1, 5), seg(2, 95)})));       // 5% similar
}

TEST(PromptCache, EntriesMustKeepAQuarterAndBeatTheSlot) {
  PromptCache cache;
  NullBackend backend(4096, 100, 1);
  const auto long_entry = seg(1, 1000);
  cache.save(long_entry, backend, {});
  // The prompt shares 200 of the entry's 1000 tokens: 20% < 25%, not considered.
  EXPECT_FALSE(cache.take_best({}, cat({seg(1, 200), seg(2, 50)})).has_value());
  // 300 of 1000: considered, and an empty slot loses to it.
  auto e = cache.take_best({}, cat({seg(1, 300), seg(2, 50)}));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->tokens.size(), 1000u);
  EXPECT_EQ(cache.entries(), 0u);
  // A slot that already covers more of the prompt wins over the entry.
  cache.save(long_entry, backend, {});
  EXPECT_FALSE(cache.take_best(seg(1, 320), cat({seg(1, 300), seg(2, 50)})).has_value());
}

TEST(PromptCache, PrefixEntriesAreReplaced) {
  PromptCache cache;
  NullBackend backend(4096, 100, 1);
  cache.save(seg(1, 100), backend, {});
  EXPECT_EQ(cache.save(seg(1, 50), backend, {}), 0u);  // already held inside the longer entry
  EXPECT_GT(cache.save(seg(1, 200), backend, {}), 0u);  // the 100-token entry is a prefix: replaced
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.contents().front().tokens.size(), 200u);
}

}  // namespace
}  // namespace tandem::serve
