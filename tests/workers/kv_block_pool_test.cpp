// KvBlockPool: refcounts, the free list, the LRU of evictable cached
// blocks, and a cached content's exact identity (parent block and its
// generation, salt, tokens), hash collisions included.
#include "workers/kv_block_pool.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "common/error.h"

namespace tandem {
namespace {

const std::vector<int32_t> kPairX = {1, 2};
const std::vector<int32_t> kPairY = {3, 4};

uint64_t pool_salt(std::string_view s) { return cache_salt_hash(std::span<const char>(s)); }

// A referenced block holding `tokens` as the first block of a prefix.
int32_t cached_root(KvBlockPool& pool, const std::vector<int32_t>& tokens, uint64_t salt = 0) {
  const int32_t b = pool.take();
  EXPECT_EQ(pool.cache(b, block_hash(0, salt, tokens), salt, {}, tokens), b);
  return b;
}

TEST(KvBlockPool, HashesDependOnParentSaltAndTokens) {
  const uint64_t h = block_hash(0, 0, kPairX);
  EXPECT_NE(h, 0u);  // 0 means "no parent"
  EXPECT_EQ(h, block_hash(0, 0, kPairX));
  EXPECT_NE(h, block_hash(0, 0, kPairY));
  EXPECT_NE(h, block_hash(0, 7, kPairX));
  EXPECT_NE(h, block_hash(h, 0, kPairX));
  EXPECT_EQ(pool_salt(""), 0u);  // no salt
  EXPECT_NE(pool_salt("a"), 0u);
  EXPECT_NE(pool_salt("a"), pool_salt("b"));
  EXPECT_NE(pool_salt("ab"), pool_salt("ba"));
  EXPECT_EQ(pool_salt("tenant-1"), pool_salt("tenant-1"));
}

TEST(KvBlockPool, TakesLowNumbersFirstThenTheMostRecentlyFreed) {
  KvBlockPool pool(4, 2);
  EXPECT_EQ(pool.take(), 0);
  EXPECT_EQ(pool.take(), 1);
  pool.unref(0);
  EXPECT_EQ(pool.available(), 3);
  EXPECT_EQ(pool.take(), 0);
  EXPECT_EQ(pool.refs(0), 1);
  EXPECT_EQ(pool.referenced(), 2);
}

TEST(KvBlockPool, ReleasedCachedBlocksAreEvictedLeastRecentlyReleasedFirst) {
  KvBlockPool pool(3, 2);
  const int32_t a = cached_root(pool, kPairX);
  const int32_t b = cached_root(pool, kPairY);
  pool.unref(a);
  pool.unref(b);
  EXPECT_EQ(pool.evictable(), 2);
  EXPECT_EQ(pool.available(), 3);
  EXPECT_EQ(pool.cached(), 2);
  // The free block goes first; then the cached ones, oldest release first.
  EXPECT_EQ(pool.take(), 2);
  EXPECT_EQ(pool.take(), a);
  EXPECT_FALSE(pool.is_cached(a));
  EXPECT_EQ(pool.find(block_hash(0, 0, kPairX), 0, {}, kPairX), -1);
  EXPECT_EQ(pool.find(block_hash(0, 0, kPairY), 0, {}, kPairY), b);  // still cached
  EXPECT_EQ(pool.take(), b);
  EXPECT_EQ(pool.cached(), 0);
  EXPECT_THROW(pool.take(), Error);  // nothing left
}

TEST(KvBlockPool, AFoundBlockLeavesTheEvictableListWhileReferenced) {
  KvBlockPool pool(2, 2);
  const int32_t a = cached_root(pool, kPairX);
  pool.unref(a);
  EXPECT_EQ(pool.evictable(), 1);
  pool.ref(a);
  EXPECT_EQ(pool.evictable(), 0);
  EXPECT_EQ(pool.available(), 1);
  EXPECT_EQ(pool.take(), 1);
  EXPECT_THROW(pool.take(), Error);  // a is referenced: it cannot be evicted
  pool.unref(a);
  EXPECT_EQ(pool.take(), a);
}

TEST(KvBlockPool, LimitEvictableForgetsTheOldestBeyondIt) {
  KvBlockPool pool(4, 2);
  const int32_t a = cached_root(pool, kPairX);
  const int32_t b = cached_root(pool, kPairY);
  pool.limit_evictable(1);
  pool.unref(a);
  pool.unref(b);  // a was released first: it goes
  EXPECT_EQ(pool.evictable(), 1);
  EXPECT_FALSE(pool.is_cached(a));
  EXPECT_TRUE(pool.is_cached(b));
  EXPECT_EQ(pool.available(), 4);
  pool.limit_evictable(0);
  EXPECT_EQ(pool.cached(), 0);
  EXPECT_THROW(pool.limit_evictable(-1), Error);
}

TEST(KvBlockPool, ContentIsCheckedExactlyNotByHash) {
  KvBlockPool pool(4, 2);
  const int32_t a = pool.take();
  const uint64_t h = 42;  // two different contents under one hash: a collision
  ASSERT_EQ(pool.cache(a, h, 0, {}, kPairX), a);
  EXPECT_EQ(pool.find(h, 0, {}, kPairX), a);
  EXPECT_EQ(pool.find(h, 0, {}, kPairY), -1);
  EXPECT_EQ(pool.find(h, 5, {}, kPairX), -1);      // another salt
  EXPECT_EQ(pool.find(h, 0, {a, 0}, kPairX), -1);  // another parent
  const int32_t b = pool.take();
  EXPECT_EQ(pool.cache(b, h, 0, {}, kPairY), b);  // the colliding content is cached beside it
  EXPECT_EQ(pool.find(h, 0, {}, kPairY), b);
  EXPECT_EQ(pool.find(h, 0, {}, kPairX), a);
}

TEST(KvBlockPool, AChildOfAForgottenParentIsNeverFoundAgain) {
  KvBlockPool pool(3, 2);
  const int32_t parent = cached_root(pool, kPairX);
  const uint32_t generation = pool.generation(parent);
  const int32_t child = pool.take();
  const uint64_t h = block_hash(pool.hash(parent), 0, kPairY);
  ASSERT_EQ(pool.cache(child, h, 0, {parent, generation}, kPairY), child);
  pool.unref(child);     // the child stays cached, evictable
  pool.uncache(parent);  // its owner rewrites it...
  EXPECT_GT(pool.generation(parent), generation);
  ASSERT_EQ(pool.cache(parent, block_hash(0, 0, kPairX), 0, {}, kPairX),
            parent);  // ...with the same tokens
  // The same hash, the same parent block, the same tokens: only the
  // generation tells that the child was computed from the old content.
  EXPECT_EQ(pool.find(h, 0, {parent, pool.generation(parent)}, kPairY), -1);
  EXPECT_EQ(pool.find(h, 0, {parent, generation}, kPairY), child);
}

TEST(KvBlockPool, CachingKnownContentReturnsTheBlockHoldingIt) {
  KvBlockPool pool(3, 2);
  const int32_t first = cached_root(pool, kPairX);
  const int32_t copy = pool.take();
  EXPECT_EQ(pool.cache(copy, block_hash(0, 0, kPairX), 0, {}, kPairX), first);
  EXPECT_FALSE(pool.is_cached(copy));  // a private copy
  pool.unref(copy);
  EXPECT_EQ(pool.evictable(), 0);  // uncached: back to the free list
  EXPECT_EQ(pool.cached(), 1);
}

// A block recorded under a parent that was since forgotten is unreachable;
// caching it again under its current parent must make it reachable.
TEST(KvBlockPool, RecachingABlockUnderANewParentRecordsItAnew) {
  KvBlockPool pool(4, 2);
  const int32_t old_parent = cached_root(pool, kPairX);
  const int32_t child = pool.take();
  const uint64_t h = block_hash(block_hash(0, 0, kPairX), 0, kPairY);
  ASSERT_EQ(pool.cache(child, h, 0, {old_parent, pool.generation(old_parent)}, kPairY), child);
  pool.unref(old_parent);
  EXPECT_EQ(pool.take(), 2);
  EXPECT_EQ(pool.take(), 3);
  EXPECT_EQ(pool.take(), old_parent);  // evicted: the child is unreachable
  pool.unref(old_parent);
  const int32_t new_parent = cached_root(pool, kPairX);
  const KvBlockPool::Parent parent{new_parent, pool.generation(new_parent)};
  EXPECT_EQ(pool.cache(child, h, 0, parent, kPairY), child);
  EXPECT_EQ(pool.find(h, 0, parent, kPairY), child);
  EXPECT_EQ(pool.cached(), 2);
}

TEST(KvBlockPool, MisuseIsAnInternalError) {
  KvBlockPool pool(2, 2);
  EXPECT_THROW(pool.ref(0), Error);    // free: nothing to share
  EXPECT_THROW(pool.unref(0), Error);  // released more often than taken
  const int32_t a = pool.take();
  EXPECT_THROW(pool.cache(a, 1, 0, {}, std::vector<int32_t>{1}), Error);  // not a full block
  pool.ref(a);
  ASSERT_EQ(pool.cache(a, block_hash(0, 0, kPairX), 0, {}, kPairX), a);
  EXPECT_THROW(pool.uncache(a), Error);  // shared: nobody may rewrite it
  EXPECT_EQ(pool.refs(a), 2);
  EXPECT_TRUE(pool.is_cached(a));
}

}  // namespace
}  // namespace tandem
