// The CPU kernels' threads: one persistent pool, and parallel_for over it.
//
// Why our own pool, not OpenMP: OpenMP's workers spin at every barrier
// (GOMP_SPINCOUNT: up to ~0.3 s) and its static schedule gives each thread
// one fixed share. On a machine where anything else is running, a thread
// that the scheduler takes off its core holds up every op's barrier (the
// tiny model meets ~60 per token) while the others spin, burning the very
// cores it waits for; decode speed swung 3x between runs and collapsed with
// one busy process beside it.
//
// The design, and why:
// - Persistent workers, woken per parallel section: starting threads per op
//   would cost more than the tiny model's ops take.
// - Spin, then park: a waiting worker polls for ~50 µs (a decode step's
//   ops follow each other within microseconds, so it usually finds the next
//   op without a system call), then sleeps on a futex. An oversubscribed
//   machine (4 MPI ranks on 2 cores, a busy neighbour) thus gets its cores
//   back after 50 µs instead of hundreds of milliseconds. The caller waits
//   for stragglers the same way.
// - A fixed partition, claimed dynamically: [0, n) is cut into chunks that
//   depend only on n and the thread count, dealt out in one contiguous
//   share per thread. Each thread (the calling one included) claims its
//   own share's chunks in order, so its reads run on from one chunk into
//   the next, then the other shares' next unclaimed ones. A thread the
//   scheduler has descheduled simply takes none, and the others do its
//   share, instead of everyone waiting for it.
// - Stragglers: a worker descheduled after it claimed a chunk still holds
//   the section up (it cannot be taken back). The caller notes how long it
//   waited for workers that did not run meanwhile (their thread CPU
//   clocks), and how long our threads queued for a CPU (run_queue_wait.h:
//   with one busy process on a 2-core machine the scheduler mostly puts
//   both our threads on one core, where they take turns and no one is ever
//   seen stalled). When the stalls are over a quarter of the time of 256
//   sections, or the mean queuing over an eighth, the next sections run on
//   the caller alone, for a period that doubles while it recurs: beside a
//   busy process on 2 cores, one thread on a core of its own beats two
//   that keep waiting for each other. Rare hiccups change nothing.
// - Batch invariance: the pool only decides *which thread* runs an index,
//   never how an index's result is computed. Callers partition by output
//   elements (a row, a block of w's rows, a (token, head)), so every
//   output is the same sequence of operations whatever the thread count.
// - One section at a time: a parallel_for inside a running body, or one
//   made while another thread holds the pool, runs serially on its own
//   thread (same results, no deadlock).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tandem::cpu {

// Where the pool's workers run: anywhere the OS likes (none), or worker i
// fixed to the i-th CPU this process may run on (cores; the calling thread
// keeps its own affinity).
enum class Pinning { none, cores };

const char* pinning_name(Pinning pinning);

// The CPUs this process may run on (sched_getaffinity), in order; empty if
// they cannot be read.
std::vector<int> allowed_cpus();
// How many: allowed_cpus().size(), at least 1.
int available_cpus();

// A body over a range [begin, end), type-erased without allocating.
class RangeBody {
 public:
  template <class Body>
  explicit RangeBody(const Body& body)
      : context_(&body), call_([](const void* context, int64_t begin, int64_t end) {
          (*static_cast<const Body*>(context))(begin, end);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(context_, begin, end); }

 private:
  const void* context_;
  void (*call_)(const void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  // `threads` counts the calling thread: threads - 1 workers are started.
  explicit ThreadPool(int threads, Pinning pinning = Pinning::none);
  ~ThreadPool();  // wakes and joins every worker
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const;
  Pinning pinning() const;
  // How many times stragglers have sent sections to the caller alone.
  int64_t alone_periods() const;

  // Calls body(begin, end) over chunks covering [0, n) exactly once each,
  // on the calling thread and the workers; returns when all are done. The
  // first exception a chunk throws is rethrown here (chunks not yet
  // started are then skipped). `chunks` > 0 asks for that many chunks
  // (at most n) instead of chunk_count's.
  void run(int64_t n, RangeBody body, int64_t chunks = 0);

  // The chunks run() cuts [0, n) into: chunk c is
  // [n * c / count, n * (c + 1) / count).
  static int64_t chunk_count(int64_t n, int threads);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The process's pool, made on first use with available_cpus() threads
// unless configure_threads() said otherwise.
ThreadPool& default_pool();

// Replaces the process's pool: threads 0 means available_cpus(). Call it
// before the kernels run (at startup), not while another thread uses them.
void configure_threads(int threads, Pinning pinning);

// "2 threads (the CPUs this process may run on), no pinning": for the
// startup log.
std::string describe_threads();

// body(begin, end) over [0, n), in parallel on the default pool when
// `parallel` (the caller's judgement that the work pays for a wake-up), in
// `chunks` chunks when > 0 (else the pool's default).
template <class Body>
void parallel_ranges(int64_t n, bool parallel, Body&& body, int64_t chunks = 0) {
  if (n <= 0) return;
  if (!parallel || n == 1) {
    body(int64_t{0}, n);
    return;
  }
  default_pool().run(n, RangeBody(body), chunks);
}

// body(i) for every i in [0, n): the drop-in for `#pragma omp parallel for`.
template <class Body>
void parallel_for(int64_t n, bool parallel, Body&& body) {
  parallel_ranges(n, parallel, [&body](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

// parallel_for with each index claimed on its own, for sections of long
// indices (a prefill's w panels, tens of microseconds each): with the
// default chunks (a quarter of a thread's share), the thread that takes
// the last one leaves the others idle for up to that long; here, for at
// most one index. A claim is one atomic add, nothing beside such indices.
template <class Body>
void parallel_for_each(int64_t n, bool parallel, Body&& body) {
  parallel_ranges(
      n, parallel,
      [&body](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) body(i);
      },
      n);
}

}  // namespace tandem::cpu
