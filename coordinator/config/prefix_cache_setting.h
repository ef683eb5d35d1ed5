// PrefixCacheSetting: whether a deployment's KV caches keep the blocks of
// prompts and answers already seen (`scheduler.prefix_caching`) and how many
// blocks nobody holds they may keep (`scheduler.prefix_cache_blocks` or
// `scheduler.prefix_cache_fraction`, resolved against each pool's size here).
// Whoever builds an allocating PagedKvCache (the target's, the draft's, the
// coordinator's accounting-only one) applies it (coordinator/deployment/
// prefix_cache_apply.h); a driven mirror (a tensor-parallel rank) follows
// its driver and is never given it.
#pragma once

#include <string>

namespace tandem {

struct PrefixCacheSetting {
  bool enabled = true;
  int max_evictable = -1;  // -1: every free block may hold cached content
  // When > 0 (at most 1), the cap is this fraction of each pool instead of
  // max_evictable (the target's and the draft's pools differ in size).
  double pool_fraction = 0;
};

// The most cached blocks nobody holds that a pool of pool_blocks keeps under
// the setting (meaningful only when it is enabled).
int evictable_limit(const PrefixCacheSetting& setting, int pool_blocks);

// "on, keeping up to every free block cached" / "off", in the words of the log and
// of `serve --check-config`.
std::string describe(const PrefixCacheSetting& setting);

}  // namespace tandem
