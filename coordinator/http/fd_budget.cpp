#include "coordinator/http/fd_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <system_error>

namespace tandem::http {
namespace {

// The descriptors this process has open, from /proc/self/fd (Linux).
int open_descriptors() {
  std::error_code ec;
  int count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace

int connections_within_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return INT_MAX;
  const long long soft = static_cast<long long>(std::min<rlim_t>(limit.rlim_cur, INT_MAX));
  return static_cast<int>(std::max(1LL, soft - open_descriptors() - kSpareDescriptors));
}

}  // namespace tandem::http
