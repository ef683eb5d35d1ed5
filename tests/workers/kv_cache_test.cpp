// PagedKvCache bookkeeping: block tables, truncation, exhaustion.
#include "workers/kv_cache.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tandem {
namespace {

ModelConfig cache_config() {
  ModelConfig config;
  config.num_layers = 2;
  config.num_kv_heads = 2;
  config.head_dim = 4;
  return config;
}

TEST(PagedKvCache, ReservesWholeBlocksAndMapsSlots) {
  auto backend = make_cpu_backend();
  PagedKvCache cache(cache_config(), /*num_blocks=*/8, /*block_size=*/4, *backend);
  const SequenceId a = cache.create_sequence();
  const SequenceId b = cache.create_sequence();
  ASSERT_TRUE(cache.reserve(a, 5));  // 2 blocks
  ASSERT_TRUE(cache.reserve(b, 4));  // 1 block
  EXPECT_EQ(cache.capacity(a), 8);
  EXPECT_EQ(cache.used_blocks(), 3);
  EXPECT_EQ(cache.block_table(a).size(), 2u);
  // a got blocks 0 and 1, b got block 2: slot = block * block_size + offset.
  EXPECT_EQ(cache.slot(a, 0), 0);
  EXPECT_EQ(cache.slot(a, 5), 1 * 4 + 1);
  EXPECT_EQ(cache.slot(b, 3), 2 * 4 + 3);
  EXPECT_EQ(cache.layer(1).kv_heads, 2);
}

TEST(PagedKvCache, TruncateFreesBlocksPastTheNewLength) {
  auto backend = make_cpu_backend();
  PagedKvCache cache(cache_config(), 8, 4, *backend);
  const SequenceId a = cache.create_sequence();
  ASSERT_TRUE(cache.reserve(a, 12));
  cache.set_length(a, 12);
  cache.truncate(a, 5);  // keeps blocks for positions 0..4
  EXPECT_EQ(cache.length(a), 5);
  EXPECT_EQ(cache.capacity(a), 8);
  EXPECT_EQ(cache.free_blocks(), 6);
  cache.truncate(a, 0);
  EXPECT_EQ(cache.free_blocks(), 8);
  EXPECT_THROW(cache.truncate(a, 1), Error);  // cannot grow by truncating
}

TEST(PagedKvCache, ExhaustionChangesNothing) {
  auto backend = make_cpu_backend();
  PagedKvCache cache(cache_config(), 3, 4, *backend);
  const SequenceId a = cache.create_sequence();
  const SequenceId b = cache.create_sequence();
  ASSERT_TRUE(cache.reserve(a, 8));
  EXPECT_FALSE(cache.reserve(b, 8));  // needs 2, one free
  EXPECT_EQ(cache.capacity(b), 0);
  EXPECT_EQ(cache.free_blocks(), 1);
  cache.release(a);
  EXPECT_EQ(cache.free_blocks(), 3);
  EXPECT_TRUE(cache.reserve(b, 12));
  EXPECT_THROW(cache.length(a), Error);  // released sequences are gone
}

TEST(PagedKvCache, SetLengthBeyondCapacityIsAnError) {
  auto backend = make_cpu_backend();
  PagedKvCache cache(cache_config(), 2, 4, *backend);
  const SequenceId a = cache.create_sequence();
  ASSERT_TRUE(cache.reserve(a, 3));
  EXPECT_THROW(cache.set_length(a, 5), Error);
}

}  // namespace
}  // namespace tandem
