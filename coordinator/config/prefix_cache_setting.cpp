#include "coordinator/config/prefix_cache_setting.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tandem {

int evictable_limit(const PrefixCacheSetting& setting, int pool_blocks) {
  if (setting.pool_fraction > 0)
    return static_cast<int>(std::floor(setting.pool_fraction * pool_blocks));
  // More than the pool could never be evictable at once, so the pool is the cap.
  if (setting.max_evictable < 0) return pool_blocks;
  return std::min(setting.max_evictable, pool_blocks);
}

std::string describe(const PrefixCacheSetting& setting) {
  if (!setting.enabled) return "off";
  std::ostringstream out;
  out << "on, keeping up to ";
  if (setting.pool_fraction > 0)
    out << setting.pool_fraction * 100 << "% of each pool";
  else if (setting.max_evictable < 0)
    out << "every free block";
  else
    out << setting.max_evictable << " unreferenced blocks";
  out << " cached";
  return out.str();
}

}  // namespace tandem
