#include "coordinator/deployment/prefix_cache_apply.h"

namespace tandem {

void apply(const PrefixCacheSetting& setting, PagedKvCache& cache) {
  if (!setting.enabled) return;
  cache.enable_prefix_caching(evictable_limit(setting, cache.num_blocks()));
}

}  // namespace tandem
