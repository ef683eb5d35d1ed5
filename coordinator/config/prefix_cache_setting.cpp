#include "coordinator/config/prefix_cache_setting.h"

#include <algorithm>

namespace tandem {

void apply(const PrefixCacheSetting& setting, PagedKvCache& cache) {
  if (!setting.enabled) return;
  // More than the pool could never be evictable at once, so the pool is the cap.
  const int pool = cache.num_blocks();
  const int limit = setting.max_evictable < 0 ? pool : std::min(setting.max_evictable, pool);
  cache.enable_prefix_caching(limit);
}

}  // namespace tandem
