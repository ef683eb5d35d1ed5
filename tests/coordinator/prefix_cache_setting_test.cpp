// The deployment's prefix caching: scheduler.prefix_caching and its cap as
// the YAML gives them (defaults, each form, the errors with key and line),
// and what apply() does to a KV cache: on or off, and how many released
// blocks the pool then keeps.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "coordinator/config/deployment_config.h"
#include "coordinator/deployment/prefix_cache_apply.h"
#include "tests/coordinator/deployment_error.h"
#include "tests/coordinator/target_only_yaml.h"
#include "workers/kv_cache.h"

namespace tandem {
namespace {

using test_support::error_of;

// Lines 1-3; scheduler: is line 4, its first key line 5.
using test_support::kTargetOnlyYaml;

PrefixCacheSetting setting_of(const std::string& scheduler_lines) {
  return parse_deployment(kTargetOnlyYaml + "scheduler:\n" + scheduler_lines, "deploy.yaml")
      .scheduler.prefix_cache;
}

TEST(PrefixCacheConfig, IsOnForTheWholePoolByDefault) {
  const PrefixCacheSetting setting = parse_deployment(kTargetOnlyYaml, "deploy.yaml").scheduler.prefix_cache;
  EXPECT_TRUE(setting.enabled);
  EXPECT_EQ(setting.max_evictable, -1);
  EXPECT_EQ(setting.pool_fraction, 0);
  EXPECT_EQ(evictable_limit(setting, 300), 300);
}

TEST(PrefixCacheConfig, ReadsEachForm) {
  EXPECT_FALSE(setting_of("  prefix_caching: false\n").enabled);
  EXPECT_TRUE(setting_of("  prefix_caching: true\n").enabled);
  const PrefixCacheSetting blocks = setting_of("  prefix_cache_blocks: 40\n");
  EXPECT_TRUE(blocks.enabled);
  EXPECT_EQ(blocks.max_evictable, 40);
  EXPECT_EQ(evictable_limit(blocks, 100), 40);
  EXPECT_EQ(evictable_limit(blocks, 10), 10);  // never more than the pool
  EXPECT_EQ(setting_of("  prefix_cache_blocks: 0\n").max_evictable, 0);
  const PrefixCacheSetting fraction = setting_of("  prefix_cache_fraction: 0.25\n");
  EXPECT_EQ(fraction.pool_fraction, 0.25);
  EXPECT_EQ(evictable_limit(fraction, 100), 25);
  EXPECT_EQ(evictable_limit(fraction, 7), 1);  // rounded down: a cap is never exceeded
  EXPECT_EQ(evictable_limit(setting_of("  prefix_cache_fraction: 1\n"), 7), 7);
}

TEST(PrefixCacheConfig, RefusesBadValuesNamingKeyAndLine) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_caching: yes\n"),
            "deploy.yaml:5: scheduler.prefix_caching: must be one of true, false, got \"yes\"");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_cache_blocks: -1\n"),
            "deploy.yaml:5: scheduler.prefix_cache_blocks: must be >= 0, got -1");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_cache_blocks: 0.5\n"),
            "deploy.yaml:5: scheduler.prefix_cache_blocks: expected an integer, got \"0.5\"");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_cache_fraction: 0\n"),
            "deploy.yaml:5: scheduler.prefix_cache_fraction: must be in (0, 1], got 0");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_cache_fraction: 1.5\n"),
            "deploy.yaml:5: scheduler.prefix_cache_fraction: must be in (0, 1], got 1.5");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_cache_fraction: half\n"),
            "deploy.yaml:5: scheduler.prefix_cache_fraction: expected a number, got \"half\"");
}

TEST(PrefixCacheConfig, RefusesBothCapsTogether) {
  EXPECT_EQ(error_of(kTargetOnlyYaml +
                     "scheduler:\n  prefix_cache_blocks: 10\n  prefix_cache_fraction: 0.5\n"),
            "deploy.yaml:6: scheduler.prefix_cache_fraction: give prefix_cache_blocks or "
            "prefix_cache_fraction, not both");
}

TEST(PrefixCacheConfig, RefusesACapWithCachingOff) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  prefix_caching: false\n  prefix_cache_blocks: 10\n"),
            "deploy.yaml:6: scheduler.prefix_cache_blocks: only used with prefix_caching: true; "
            "remove it or turn caching on");
}

// A cache of 8 blocks of 2 tokens, bookkeeping only.
ModelConfig tiny_config() {
  ModelConfig config;
  config.num_layers = 1;
  config.num_kv_heads = 1;
  config.head_dim = 2;
  return config;
}

// Fills 4 blocks with published tokens, releases them, and returns how
// many blocks the cache keeps cached afterwards.
int cached_after_release(const PrefixCacheSetting& setting) {
  auto backend = make_cpu_backend();
  PagedKvCache cache(tiny_config(), /*num_blocks=*/8, /*block_size=*/2, *backend, {},
                     PagedKvCache::Storage::none);
  apply(setting, cache);
  EXPECT_EQ(cache.prefix_caching(), setting.enabled);
  std::vector<int32_t> tokens(8);
  std::iota(tokens.begin(), tokens.end(), 100);
  const SequenceId seq = cache.create_sequence();
  EXPECT_TRUE(cache.reserve(seq, 8));
  cache.set_length(seq, 8);
  if (cache.prefix_caching()) cache.publish(seq, tokens, 0);
  cache.release(seq);
  EXPECT_EQ(cache.free_blocks(), 8);  // cached or not, every block is available
  return cache.cached_blocks();
}

TEST(PrefixCacheApply, KeepsReleasedBlocksUpToTheCap) {
  EXPECT_EQ(cached_after_release({}), 4);
  EXPECT_EQ(cached_after_release({.max_evictable = 3}), 3);
  EXPECT_EQ(cached_after_release({.max_evictable = 0}), 0);
  EXPECT_EQ(cached_after_release({.pool_fraction = 0.25}), 2);
  EXPECT_EQ(cached_after_release({.enabled = false}), 0);
}

TEST(PrefixCacheApply, DescribesTheSetting) {
  EXPECT_EQ(describe(PrefixCacheSetting{.enabled = false}), "off");
  EXPECT_EQ(describe(PrefixCacheSetting{}), "on, keeping up to every free block cached");
  EXPECT_EQ(describe(PrefixCacheSetting{.max_evictable = 12}),
            "on, keeping up to 12 unreferenced blocks cached");
  EXPECT_EQ(describe(PrefixCacheSetting{.pool_fraction = 0.5}),
            "on, keeping up to 50% of each pool cached");
}

}  // namespace
}  // namespace tandem
