// How long a thread has waited for a CPU: runnable, but not running.
//
// The thread pool's fallback (thread_pool.h) needs to see another process
// competing for our cores even when no chunk is ever held up by it. With
// one busy process on a 2-core machine the scheduler mostly puts both of
// our threads on one core (a wake-up lands the worker beside the thread
// that woke it) and the busy one alone on the other: our two threads then
// take turns on one core, slower than one thread on a core of its own, and
// every worker is running whenever it is looked at, so there is no
// straggler to see. What does show is the time each of them spends queued
// for the CPU, which Linux counts per thread (schedstat: the second field
// of /proc/<pid>/task/<tid>/schedstat, in nanoseconds). A virtual machine's
// steal time is not in it: a noisy host does not look like a busy neighbour.
#pragma once

#include <cstdint>

namespace tandem::cpu {

// An open handle on the calling thread's schedstat, or -1 where the kernel
// keeps none (built without schedstats, /proc not mounted). Any thread may
// read it afterwards; close it with close_run_queue_wait().
int open_run_queue_wait();
void close_run_queue_wait(int handle);

// Nanoseconds the handle's thread has waited on a run queue since it
// started; -1 for handle -1 or a read that fails.
int64_t run_queue_wait_ns(int handle);

}  // namespace tandem::cpu
