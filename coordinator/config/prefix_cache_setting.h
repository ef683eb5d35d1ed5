// PrefixCacheSetting: whether a deployment's KV caches keep the blocks of
// prompts and answers already seen (`scheduler.prefix_caching`) and how many
// blocks nobody holds they may keep (`scheduler.prefix_cache_blocks` or
// `scheduler.prefix_cache_fraction`, resolved against the pool's size here).
// Whoever builds an allocating PagedKvCache (the target's, the draft's, the
// coordinator's accounting-only one) applies it; a driven mirror (a
// tensor-parallel rank) follows its driver and is never given it.
#pragma once

#include "workers/kv_cache.h"

namespace tandem {

struct PrefixCacheSetting {
  bool enabled = true;
  int max_evictable = -1;  // -1: every free block may hold cached content
};

// Turns prefix caching on for `cache` with at most setting.max_evictable
// cached unreferenced blocks (the whole pool when -1); does nothing when the
// setting is off.
void apply(const PrefixCacheSetting& setting, PagedKvCache& cache);

}  // namespace tandem
