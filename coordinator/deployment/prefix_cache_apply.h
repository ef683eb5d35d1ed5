// Turning a deployment's prefix caching setting into a KV cache's state:
// here, where the caches are built, so that the configuration itself
// (coordinator/config/) needs nothing of the KV cache.
#pragma once

#include "coordinator/config/prefix_cache_setting.h"
#include "workers/kv_cache.h"

namespace tandem {

// Turns prefix caching on for `cache` with at most evictable_limit() cached
// unreferenced blocks; does nothing when the setting is off.
void apply(const PrefixCacheSetting& setting, PagedKvCache& cache);

}  // namespace tandem
