// run_queue_wait.h on Linux: the second number of /proc/thread-self/schedstat.
#include "kernels/cpu/run_queue_wait.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace tandem::cpu {

int open_run_queue_wait() { return open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC); }

void close_run_queue_wait(int handle) {
  if (handle >= 0) close(handle);
}

int64_t run_queue_wait_ns(int handle) {
  if (handle < 0) return -1;
  // "<ns on a CPU> <ns waiting on a run queue> <time slices>\n", read afresh
  // from the start each time.
  char text[128];
  const ssize_t got = pread(handle, text, sizeof(text) - 1, 0);
  if (got <= 0) return -1;
  text[got] = '\0';
  unsigned long long on_cpu = 0, waited = 0;
  if (std::sscanf(text, "%llu %llu", &on_cpu, &waited) != 2) return -1;
  return static_cast<int64_t>(waited);
}

}  // namespace tandem::cpu
