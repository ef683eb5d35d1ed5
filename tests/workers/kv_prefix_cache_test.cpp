// PagedKvCache's prefix caching, case by case: salt isolation, content
// identity across rewrites and evictions, stand-ins, LRU order and its
// limit, match_prefix, max_tokens, truncation of shared and published
// blocks, the driven mirror (adopt_blocks), and the cache with caching off.
// The random mix of all of it is kv_cache_property_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "workers/kv_cache.h"

namespace tandem {
namespace {

constexpr int kBs = 4;

std::vector<int32_t> operator+(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const std::vector<int32_t> kX = {1, 2, 3, 4};
const std::vector<int32_t> kY = {5, 6, 7, 8};
const std::vector<int32_t> kZ = {9, 10, 11, 12};
const std::vector<int32_t> kW = {13, 14, 15, 16};

uint64_t salt_of(std::string_view s) { return cache_salt_hash(std::span<const char>(s)); }

// An accounting-only cache of `blocks` blocks of kBs positions.
struct Cache {
  explicit Cache(int blocks, int max_evictable = 1 << 20, bool caching = true)
      : kv(config(), blocks, kBs, *backend, {}, PagedKvCache::Storage::none) {
    if (caching) kv.enable_prefix_caching(max_evictable);
  }
  static ModelConfig config() {
    ModelConfig c;
    c.num_layers = 1;
    c.num_kv_heads = 1;
    c.head_dim = 2;
    return c;
  }
  // A session on `tokens`: attaches what is cached, computes the rest, publishes.
  SequenceId compute(const std::vector<int32_t>& tokens, uint64_t salt = 0) {
    const SequenceId s = kv.create_sequence();
    const int n = static_cast<int>(tokens.size());
    kv.attach_prefix(s, tokens, salt, n);
    EXPECT_TRUE(kv.reserve(s, n));
    kv.set_length(s, n);
    kv.publish(s, tokens, salt);
    return s;
  }
  int cached(const std::vector<int32_t>& tokens, uint64_t salt = 0) const {
    return kv.match_prefix(tokens, salt, static_cast<int>(tokens.size())).tokens;
  }
  std::vector<int32_t> table(SequenceId s) const {
    const auto t = kv.block_table(s);
    return {t.begin(), t.end()};
  }

  std::unique_ptr<Backend> backend = make_cpu_backend();
  PagedKvCache kv;
};

TEST(KvPrefixCache, SaltsIsolateTheirBlocks) {
  Cache c(16);
  const uint64_t a = salt_of("tenant-a");
  const uint64_t b = salt_of("tenant-b");
  c.kv.release(c.compute(kX + kY));  // no salt
  EXPECT_EQ(c.cached(kX + kY), 8);
  EXPECT_EQ(c.cached(kX + kY, a), 0);  // a salt never sees unsalted blocks
  const SequenceId under_a = c.compute(kX + kY, a);
  EXPECT_EQ(c.kv.prefix_counters().hits, 0u);
  EXPECT_EQ(c.cached(kX + kY, a), 8);
  EXPECT_EQ(c.cached(kX + kY, b), 0);
  const SequenceId also_a = c.kv.create_sequence();
  EXPECT_EQ(c.kv.attach_prefix(also_a, kX + kY, a, 8), 8);  // the same salt hits
  EXPECT_EQ(c.table(also_a), c.table(under_a));
  c.kv.release(under_a);
  c.kv.release(also_a);
  const SequenceId under_b = c.compute(kX + kY, b);
  EXPECT_EQ(c.kv.prefix_counters().hits, 8u);  // only also_a's
  const SequenceId unsalted = c.kv.create_sequence();
  ASSERT_EQ(c.kv.attach_prefix(unsalted, kX + kY, 0, 8), 8);
  for (int32_t block : c.table(under_b))  // three salts, three copies
    for (int32_t other : c.table(unsalted)) EXPECT_NE(block, other);
  EXPECT_EQ(c.kv.cached_blocks(), 6);
}

TEST(KvPrefixCache, ASequenceKeepsTheSaltItWasAttachedWith) {
  Cache c(8);
  const uint64_t a = salt_of("tenant-a");
  const SequenceId s = c.kv.create_sequence();
  c.kv.attach_prefix(s, kX + kY, a, 8);
  ASSERT_TRUE(c.kv.reserve(s, 8));
  c.kv.set_length(s, 8);
  c.kv.publish(s, kX + kY, 0);  // a later publish cannot move it out of its salt
  EXPECT_EQ(c.cached(kX + kY, a), 8);
  EXPECT_EQ(c.cached(kX + kY, 0), 0);
}

TEST(KvPrefixCache, AnOldChildIsNeverFoundUnderARewrittenParent) {
  Cache c(8);
  const SequenceId s = c.compute(kX + kY);
  c.kv.truncate(s, 4);  // Y's block: released, still cached
  c.kv.truncate(s, 1);  // X's block: held by s alone, rewritten from position 1
  EXPECT_EQ(c.cached(kX), 0);
  ASSERT_TRUE(c.kv.reserve(s, 4));
  c.kv.set_length(s, 4);
  c.kv.publish(s, kX, 0);  // the same tokens again, in the same block
  EXPECT_EQ(c.cached(kX), 4);
  // Y's block was computed from X's block before the rewrite: not found.
  EXPECT_EQ(c.cached(kX + kY), 4);
  c.kv.truncate(s, 1);
  c.kv.set_length(s, 4);
  const std::vector<int32_t> other = {1, 10, 11, 12};  // now other tokens after position 0
  c.kv.publish(s, other, 0);
  EXPECT_EQ(c.cached(kX + kY), 0);
  EXPECT_EQ(c.cached(other + kY), 4);
}

TEST(KvPrefixCache, AContinuationIsFoundThroughAStandIn) {
  Cache c(8);
  const SequenceId first = c.kv.create_sequence();
  const SequenceId second = c.kv.create_sequence();  // admitted together: both compute X
  c.kv.attach_prefix(first, kX, 0, 4);
  c.kv.attach_prefix(second, kX + kY, 0, 8);
  ASSERT_TRUE(c.kv.reserve(first, 4) && c.kv.reserve(second, 8));
  c.kv.set_length(first, 4);
  c.kv.set_length(second, 8);
  c.kv.publish(first, kX, 0);
  c.kv.publish(second, kX + kY, 0);  // X already cached in first's block
  EXPECT_EQ(c.kv.cached_blocks(), 2);
  const SequenceId third = c.kv.create_sequence();
  EXPECT_EQ(c.kv.attach_prefix(third, kX + kY + kZ, 0, 12), 8);
  EXPECT_EQ(c.table(third), (std::vector<int32_t>{c.table(first)[0], c.table(second)[1]}));
}

// The stand-in (first's block) goes while second runs on: second's next
// publish records its own copy of X, and its Y under it, findable again.
TEST(KvPrefixCache, AContinuationIsFoundAgainAfterItsStandInIsEvicted) {
  Cache c(8, /*max_evictable=*/0);  // released blocks are forgotten at once
  const SequenceId first = c.kv.create_sequence();
  const SequenceId second = c.kv.create_sequence();
  c.kv.attach_prefix(first, kX, 0, 4);
  c.kv.attach_prefix(second, kX + kY, 0, 8);
  ASSERT_TRUE(c.kv.reserve(first, 4) && c.kv.reserve(second, 8));
  c.kv.set_length(first, 4);
  c.kv.set_length(second, 8);
  c.kv.publish(first, kX, 0);
  c.kv.publish(second, kX + kY, 0);  // X stood in by first's block
  EXPECT_EQ(c.cached(kX + kY), 8);
  c.kv.release(first);  // the stand-in is forgotten, and Y's block with it
  EXPECT_EQ(c.cached(kX + kY), 0);
  ASSERT_TRUE(c.kv.reserve(second, 10));
  c.kv.set_length(second, 10);
  c.kv.publish(second, kX + kY + std::vector<int32_t>{1, 2}, 0);  // the next pass
  EXPECT_EQ(c.cached(kX + kY), 8);
  const SequenceId third = c.kv.create_sequence();
  EXPECT_EQ(c.kv.attach_prefix(third, kX + kY, 0, 8), 8);
  EXPECT_EQ(c.table(third), (std::vector<int32_t>{c.table(second)[0], c.table(second)[1]}));
}

TEST(KvPrefixCache, AReleasedPrefixIsEvictedFromItsTail) {
  Cache c(4);
  c.kv.release(c.compute(kX + kY + kZ));
  EXPECT_EQ(c.kv.evictable_blocks(), 3);
  EXPECT_EQ(c.kv.free_blocks(), 4);
  EXPECT_EQ(c.kv.used_blocks(), 0);
  const SequenceId other = c.kv.create_sequence();
  ASSERT_TRUE(c.kv.reserve(other, 8));  // the free block, then Z's
  EXPECT_EQ(c.cached(kX + kY + kZ), 8);
  ASSERT_TRUE(c.kv.reserve(other, 12));  // then Y's
  EXPECT_EQ(c.cached(kX + kY + kZ), 4);
  EXPECT_EQ(c.kv.evictable_blocks(), 1);
  EXPECT_FALSE(c.kv.reserve(other, 20));  // 2 more blocks: only X's is left
  EXPECT_EQ(c.cached(kX), 4);             // and a failed reservation evicts nothing
}

TEST(KvPrefixCache, LimitEvictableKeepsThePrefixHead) {
  Cache c(6, /*max_evictable=*/2);
  c.kv.release(c.compute(kX + kY + kZ + kW));
  EXPECT_EQ(c.kv.evictable_blocks(), 2);
  EXPECT_EQ(c.kv.cached_blocks(), 2);
  EXPECT_EQ(c.kv.free_blocks(), 6);
  EXPECT_EQ(c.cached(kX + kY + kZ + kW), 8);
  const SequenceId held = c.compute(kX + kY + kZ + kW);  // referenced blocks are not capped
  EXPECT_EQ(c.kv.cached_blocks(), 4);
  c.kv.release(held);
  EXPECT_EQ(c.kv.evictable_blocks(), 2);
  EXPECT_EQ(c.cached(kX + kY + kZ + kW), 8);
  EXPECT_THROW(c.kv.enable_prefix_caching(-1), Error);
}

TEST(KvPrefixCache, MatchPrefixChangesNothing) {
  Cache c(8);
  c.kv.release(c.compute(kX + kY + kZ));
  const SequenceId holder = c.kv.create_sequence();
  ASSERT_EQ(c.kv.attach_prefix(holder, kX + kW, 0, 8), 4);  // holds X's block
  const auto before = c.kv.prefix_counters();
  const int free = c.kv.free_blocks();
  const int evictable = c.kv.evictable_blocks();
  const PagedKvCache::PrefixMatch m = c.kv.match_prefix(kX + kY + kZ + kW, 0, 16);
  EXPECT_EQ(m.tokens, 12);
  EXPECT_EQ(m.blocks, 3);
  EXPECT_EQ(m.evictable, 2);  // Y's and Z's: attaching would take them from the pool
  EXPECT_EQ(c.kv.free_blocks(), free);
  EXPECT_EQ(c.kv.evictable_blocks(), evictable);
  EXPECT_EQ(c.kv.used_blocks(), 1);
  EXPECT_EQ(c.kv.prefix_counters().queries, before.queries);
  EXPECT_EQ(c.kv.prefix_counters().hits, before.hits);
  EXPECT_EQ(c.kv.pool().refs(c.table(holder)[0]), 1);
}

TEST(KvPrefixCache, MaxTokensCapsTheMatch) {
  Cache c(8);
  c.kv.release(c.compute(kX + kY + kZ));
  const auto all = kX + kY + kZ;
  EXPECT_EQ(c.kv.match_prefix(all, 0, 12).tokens, 12);
  EXPECT_EQ(c.kv.match_prefix(all, 0, 11).tokens, 8);  // a prompt's last token is computed
  EXPECT_EQ(c.kv.match_prefix(all, 0, 3).tokens, 0);
  EXPECT_EQ(c.kv.match_prefix(all, 0, -1).tokens, 0);
  EXPECT_EQ(c.kv.match_prefix(kX + kY + std::vector<int32_t>{9, 10}, 0, 100).tokens, 8);
  const uint64_t queries = c.kv.prefix_counters().queries;
  const uint64_t hits = c.kv.prefix_counters().hits;
  const SequenceId s = c.kv.create_sequence();
  EXPECT_EQ(c.kv.attach_prefix(s, all, 0, 9), 8);
  EXPECT_EQ(c.kv.length(s), 8);
  EXPECT_EQ(c.kv.prefix_counters().queries, queries + 12);  // every token looked up counts
  EXPECT_EQ(c.kv.prefix_counters().hits, hits + 8);
  EXPECT_THROW(c.kv.attach_prefix(s, all, 0, 12), Error);  // only onto an empty sequence
}

TEST(KvPrefixCache, SharedBlocksAreNeverTruncatedIntoAndOwnOnesAreUnpublished) {
  Cache c(8);
  const SequenceId a = c.compute(kX + kY);
  const SequenceId b = c.kv.create_sequence();
  ASSERT_EQ(c.kv.attach_prefix(b, kX + kY, 0, 8), 8);
  c.kv.truncate(b, 6);           // into Y's block, which a holds too
  EXPECT_EQ(c.kv.length(b), 4);  // stops at its start; b feeds Y's tokens again
  EXPECT_EQ(c.table(b).size(), 1u);
  EXPECT_EQ(c.cached(kX + kY), 8);
  c.kv.truncate(a, 6);  // a holds Y's block alone now: it is rewritten
  EXPECT_EQ(c.kv.length(a), 6);
  EXPECT_EQ(c.cached(kX + kY), 4);
  c.kv.truncate(a, 4);  // a whole-block cut keeps content: nothing is rewritten
  EXPECT_EQ(c.cached(kX), 4);
  EXPECT_EQ(c.kv.pool().refs(c.table(a)[0]), 2);
}

TEST(KvPrefixCache, AdoptBlocksDrivesAMirror) {
  Cache c(8, 0, /*caching=*/false);
  const SequenceId s = c.kv.create_sequence();
  c.kv.adopt_blocks(s, 0, std::vector<int32_t>{5, 7});
  EXPECT_EQ(c.table(s), (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(c.kv.used_blocks(), 0);  // the pool is not used
  c.kv.set_length(s, 6);
  c.kv.adopt_blocks(s, 1, std::vector<int32_t>{2});  // keeps 5, continues with 2
  EXPECT_EQ(c.table(s), (std::vector<int32_t>{5, 2}));
  EXPECT_EQ(c.kv.length(s), 4);
  c.kv.truncate(s, 2);
  EXPECT_EQ(c.table(s), (std::vector<int32_t>{5}));
  EXPECT_THROW(c.kv.adopt_blocks(s, 2, {}), Error);                       // keeps more than it has
  EXPECT_THROW(c.kv.adopt_blocks(s, 1, std::vector<int32_t>{8}), Error);  // outside the cache
  EXPECT_THROW(c.kv.reserve(s, 8), Error);                                // it does not allocate
  EXPECT_THROW(c.kv.enable_prefix_caching(4), Error);
  c.kv.release(s);
  EXPECT_EQ(c.kv.free_blocks(), 8);

  Cache allocating(8, 0, /*caching=*/false);
  const SequenceId t = allocating.kv.create_sequence();
  ASSERT_TRUE(allocating.kv.reserve(t, 4));
  EXPECT_THROW(allocating.kv.adopt_blocks(t, 0, std::vector<int32_t>{3}), Error);
  EXPECT_EQ(allocating.table(t).size(), 1u);
  Cache caching(8);
  const SequenceId u = caching.kv.create_sequence();
  EXPECT_THROW(caching.kv.adopt_blocks(u, 0, std::vector<int32_t>{3}), Error);
  EXPECT_TRUE(caching.table(u).empty());
}

TEST(KvPrefixCache, WithCachingOffNothingIsKept) {
  Cache c(8, 0, /*caching=*/false);
  EXPECT_FALSE(c.kv.prefix_caching());
  const SequenceId a = c.compute(kX + kY + kZ);
  EXPECT_EQ(c.kv.cached_blocks(), 0);  // publish did nothing
  EXPECT_EQ(c.kv.used_blocks(), 3);
  c.kv.truncate(a, 5);
  EXPECT_EQ(c.kv.length(a), 5);
  EXPECT_EQ(c.kv.free_blocks(), 6);
  EXPECT_EQ(c.kv.used_blocks(), 2);
  c.kv.release(a);
  EXPECT_EQ(c.kv.free_blocks(), 8);
  EXPECT_EQ(c.kv.evictable_blocks(), 0);
  const SequenceId b = c.kv.create_sequence();
  EXPECT_EQ(c.kv.attach_prefix(b, kX + kY, 0, 8), 0);
  EXPECT_EQ(c.kv.match_prefix(kX + kY, 0, 8).tokens, 0);
  EXPECT_EQ(c.kv.prefix_counters().queries, 0u);  // nothing looked up
  EXPECT_EQ(c.kv.length(b), 0);
  ASSERT_TRUE(c.kv.reserve(b, 32));  // all 8 blocks: none kept back
  EXPECT_FALSE(c.kv.reserve(b, 33));
}

}  // namespace
}  // namespace tandem
