// The pool of thread_pool.h. The protocol, in one place:
//
// run() fills a Job on its own stack, publishes it in `current`, bumps
// `generation` (the futex word workers sleep on) and wakes sleepers only if
// some are asleep. Everyone, the caller included, then claims chunks, each
// with one fetch_add on a share's cursor (its own share's first, in order,
// then the others'), and counts finished ones in `done`. The caller
// waits (spin, then futex on `done`) until every chunk is done, withdraws
// the job (`current` = null) and waits until no worker still holds it
// (`users` = 0): a worker announces itself in `users` before reading
// `current`, so a late one either sees null or is waited for. Both pairs
// of (announce, check) are sequentially consistent, the classic pattern
// that stops a wake-up or a reader being missed.
#include "kernels/cpu/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/run_queue_wait.h"

namespace tandem::cpu {
namespace {

using Clock = std::chrono::steady_clock;

// How long a waiting thread polls before it sleeps: longer than the gap
// between a step's ops, far shorter than a scheduler time slice.
constexpr auto kSpin = std::chrono::microseconds(50);
// Chunks per thread: enough that others can take a descheduled thread's
// share, few enough that claiming one (an atomic add) costs nothing.
constexpr int64_t kChunksPerThread = 4;
// A straggler: the caller, out of chunks, waited at least this long for
// the others, and no worker ran for half of that wait (by its thread CPU
// clock): a chunk's holder was descheduled, as when another process shares
// its core. (A long wait for a worker that is running is an uneven split,
// not a straggler.)
constexpr auto kStraggleFloor = std::chrono::microseconds(300);
// Parallel sections are judged in windows of kWindow: when stragglers held
// up more than 1 / kStallShareInverse of a window's time, the next sections
// run on the caller alone, for a period that starts at kAloneFirst and
// doubles (up to kAloneMax) while windows keep failing. A rare hiccup (a
// virtual CPU paused by its host) costs a window little and changes nothing.
constexpr int64_t kWindow = 256;
constexpr int kStallShareInverse = 4;
// The same verdict when our threads, on average, waited on a run queue
// (runnable, another thread on their core: run_queue_wait.h) for over
// 1 / kQueueShareInverse of the window. Alone, an idle machine's threads
// wait there for microseconds per window; two threads sharing a core with
// a third, for a third or more of it.
constexpr int kQueueShareInverse = 8;
constexpr int64_t kAloneFirst = 256;
constexpr int64_t kAloneMax = 16384;

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  // Returns at once if the word no longer holds `expected`; spurious
  // wake-ups are fine, every caller re-checks in a loop.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` for kSpin; false if it never held.
template <class Ready>
bool spin_until(Ready ready) {
  const auto until = Clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (Clock::now() >= until) return false;
  }
}

// Set while a thread runs a pool's chunks: a parallel_for inside runs serially.
thread_local bool tl_in_pool = false;

// The calling thread's run-queue handle (run_queue_wait.h), opened the
// first time it begins a window and closed when the thread ends, and a
// number no other thread of the process gets (a handle's number or a thread
// id may be reused once a thread ends).
std::atomic<uint64_t> g_next_caller{0};
struct CallerQueueHandle {
  int handle = open_run_queue_wait();
  uint64_t caller = g_next_caller.fetch_add(1, std::memory_order_relaxed);
  ~CallerQueueHandle() { close_run_queue_wait(handle); }
};
thread_local CallerQueueHandle tl_caller_queue;

}  // namespace

const char* pinning_name(Pinning pinning) { return pinning == Pinning::cores ? "cores" : "none"; }

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

int available_cpus() { return std::max<int>(1, static_cast<int>(allowed_cpus().size())); }

// The chunks are dealt out in one contiguous share per thread; a share's
// cursor is its next unclaimed chunk, on a cache line of its own. A thread
// claims its own share's chunks in order, so that its reads stream on from
// one chunk into the next (claiming every other chunk from one counter,
// each thread began every chunk cold, its prefetches run into a chunk
// another thread was reading: the tiny model decoded up to 1.2x slower),
// then the others' next ones, which is how the work of a thread the
// scheduler has descheduled still gets done.
struct alignas(64) Cursor {
  std::atomic<int64_t> next{0};
  int64_t end = 0;
};

struct Job {
  RangeBody body;
  int64_t n = 0;
  int64_t chunks = 0;
  Cursor* cursors = nullptr;  // one per share
  int shares = 0;
  std::atomic<uint32_t> done{0};
  std::atomic<bool> caller_asleep{false};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;

  explicit Job(RangeBody b) : body(b) {}

  // Claims and runs chunks until none is left: thread `self`'s own share
  // first, then each other's in turn.
  void work(int self) {
    for (int k = 0; k < shares; ++k) {
      Cursor& cursor = cursors[(self + k) % shares];
      for (int64_t c = claim(cursor); c < cursor.end; c = claim(cursor)) run_chunk(c);
    }
  }

 private:
  static int64_t claim(Cursor& cursor) { return cursor.next.fetch_add(1, std::memory_order_relaxed); }

  void run_chunk(int64_t c) {
    if (!failed.load(std::memory_order_relaxed)) {
      try {
        body(n * c / chunks, n * (c + 1) / chunks);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
    const uint32_t finished = done.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (finished == static_cast<uint32_t>(chunks) && caller_asleep.load(std::memory_order_seq_cst))
      futex_wake_all(done);
  }
};

struct ThreadPool::State {
  int threads = 1;
  Pinning pinning = Pinning::none;
  std::vector<std::thread> workers;
  std::mutex busy;  // one section at a time; others run serially
  std::atomic<uint32_t> generation{0};
  std::atomic<int> sleepers{0};
  std::atomic<Job*> current{nullptr};
  std::atomic<int> users{0};
  std::atomic<bool> stop{false};
  std::vector<Cursor> cursors;  // the running job's shares, one per thread at most
  // The straggler fallback, touched only under `busy`: sections still to
  // run on the caller alone, the next such period, the current window, and
  // how many periods there have been.
  int64_t alone_left = 0;
  int64_t alone_period = kAloneFirst;
  int64_t window_sections = 0;
  Clock::duration window_time{};
  Clock::duration window_stalled{};
  int64_t alone_periods = 0;

  // Run-queue waits (run_queue_wait.h): each worker's handle (published by
  // the worker as it starts, -2 until then), the handle of the thread that
  // began the current window, and our threads' total wait then. A window
  // that another thread ends (the pool has several callers) is not judged
  // by its waits: its first caller's handle says nothing of the second.
  std::unique_ptr<std::atomic<int>[]> worker_queue;  // threads - 1
  uint64_t window_caller = 0;
  int64_t window_queued_from = -1;

  // Each worker's thread CPU clock. (Schedstat's first field is the same
  // time, but the stall check stays on these clocks so that it works where
  // the kernel keeps no schedstat.)
  std::vector<clockid_t> worker_clocks;
  std::vector<int64_t> worker_cpu_ns;     // their readings when a wait began

  static int64_t cpu_ns(clockid_t clock) {
    timespec t{};
    clock_gettime(clock, &t);
    return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
  }
  void note_worker_cpu() {
    worker_cpu_ns.resize(worker_clocks.size());
    for (size_t i = 0; i < worker_clocks.size(); ++i) worker_cpu_ns[i] = cpu_ns(worker_clocks[i]);
  }
  // Whether no worker ran for half of `wait` since note_worker_cpu().
  bool workers_stalled(Clock::duration wait) const {
    const int64_t half = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count() / 2;
    for (size_t i = 0; i < worker_clocks.size(); ++i)
      if (cpu_ns(worker_clocks[i]) - worker_cpu_ns[i] >= half) return false;
    return true;
  }

  // Our threads' run-queue waits, summed: -1 if one cannot be read.
  int64_t queued_ns() const {
    int64_t total = run_queue_wait_ns(tl_caller_queue.handle);
    for (int i = 0; i + 1 < threads && total >= 0; ++i) {
      const int64_t worker = run_queue_wait_ns(worker_queue[i].load(std::memory_order_acquire));
      total = worker < 0 ? -1 : total + worker;
    }
    return total;
  }
  // Before a window's first section, on the thread that runs it.
  void begin_window() {
    window_caller = tl_caller_queue.caller;
    window_queued_from = queued_ns();
  }
  // The mean run-queue wait of our threads over the window; 0 if unknown.
  Clock::duration window_queued() const {
    if (tl_caller_queue.caller != window_caller) return {};
    const int64_t now = queued_ns();
    if (window_queued_from < 0 || now < 0) return {};
    return std::chrono::nanoseconds((now - window_queued_from) / threads);
  }

  // After a parallel section that took `time`, `stalled` of it waiting
  // for a straggler.
  void judge(Clock::duration time, Clock::duration stalled) {
    window_time += time;
    window_stalled += stalled;
    if (++window_sections < kWindow) return;
    if (window_stalled * kStallShareInverse > window_time ||
        window_queued() * kQueueShareInverse > window_time) {
      alone_left = alone_period;
      alone_period = std::min(2 * alone_period, kAloneMax);
      ++alone_periods;
    } else {
      alone_period = kAloneFirst;
    }
    window_sections = 0;
    window_time = window_stalled = Clock::duration{};
  }


  // `seen` is the generation when the pool was made, not when this thread
  // first runs: a worker the OS starts late must still see every bump since,
  // the destructor's included.
  // `self` numbers the thread (the caller is 0): its share of each job.
  void worker_loop(uint32_t seen, int self) {
    tl_in_pool = true;
    worker_queue[self - 1].store(open_run_queue_wait(), std::memory_order_release);
    for (;;) {
      if (!spin_until([&] { return generation.load(std::memory_order_acquire) != seen; })) {
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        while (generation.load(std::memory_order_seq_cst) == seen) futex_wait(generation, seen);
        sleepers.fetch_sub(1, std::memory_order_seq_cst);
      }
      seen = generation.load(std::memory_order_acquire);
      if (stop.load(std::memory_order_acquire)) return;
      users.fetch_add(1, std::memory_order_seq_cst);
      if (Job* job = current.load(std::memory_order_seq_cst)) job->work(self);
      users.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  void wake_workers() {
    generation.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(generation);
  }
};

ThreadPool::ThreadPool(int threads, Pinning pinning) : state_(std::make_unique<State>()) {
  require(threads >= 1, ErrorKind::invalid_argument,
          "a thread pool needs at least 1 thread, got " + std::to_string(threads));
  state_->threads = threads;
  state_->pinning = pinning;
  state_->cursors = std::vector<Cursor>(static_cast<size_t>(threads));
  state_->worker_queue = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(threads - 1));
  for (int i = 0; i + 1 < threads; ++i) state_->worker_queue[i].store(-2);
  const std::vector<int> cpus = allowed_cpus();
  for (int i = 1; i < threads; ++i) {
    state_->workers.emplace_back([state = state_.get(), i] { state->worker_loop(0, i); });
    clockid_t clock{};
    if (pthread_getcpuclockid(state_->workers.back().native_handle(), &clock) == 0)
      state_->worker_clocks.push_back(clock);
    if (pinning == Pinning::cores && !cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[static_cast<size_t>(i) % cpus.size()], &set);
      // Best effort: a CPU taken away since is no reason to stop serving.
      pthread_setaffinity_np(state_->workers.back().native_handle(), sizeof(set), &set);
    }
  }
}

ThreadPool::~ThreadPool() {
  state_->stop.store(true, std::memory_order_release);
  state_->wake_workers();
  for (std::thread& worker : state_->workers) worker.join();
  for (int i = 0; i + 1 < state_->threads; ++i) close_run_queue_wait(state_->worker_queue[i].load());
}

int ThreadPool::threads() const { return state_->threads; }

int64_t ThreadPool::alone_periods() const {
  std::lock_guard lock(state_->busy);
  return state_->alone_periods;
}
Pinning ThreadPool::pinning() const { return state_->pinning; }

int64_t ThreadPool::chunk_count(int64_t n, int threads) {
  return std::min<int64_t>(n, static_cast<int64_t>(threads) * kChunksPerThread);
}

void ThreadPool::run(int64_t n, RangeBody body, int64_t chunks) {
  if (n <= 0) return;
  State& s = *state_;
  std::unique_lock lock(s.busy, std::try_to_lock);
  if (s.threads == 1 || n == 1 || tl_in_pool || !lock.owns_lock()) {
    body(0, n);  // nested, contended or single-threaded: serially, same results
    return;
  }
  if (s.alone_left > 0) {  // after a straggler (State::judge): the caller alone, same results
    --s.alone_left;
    body(0, n);
    return;
  }
  if (s.window_sections == 0) s.begin_window();
  Job job(body);
  job.n = n;
  job.chunks = chunks > 0 ? std::min(n, chunks) : chunk_count(n, s.threads);
  job.shares = static_cast<int>(std::min<int64_t>(s.threads, job.chunks));
  job.cursors = s.cursors.data();
  for (int share = 0; share < job.shares; ++share) {
    // Written before `current` publishes the job; no one holds the last job.
    Cursor& cursor = s.cursors[static_cast<size_t>(share)];
    cursor.next.store(job.chunks * share / job.shares, std::memory_order_relaxed);
    cursor.end = job.chunks * (share + 1) / job.shares;
  }
  s.current.store(&job, std::memory_order_seq_cst);
  s.wake_workers();

  const auto began = Clock::now();
  tl_in_pool = true;
  job.work(0);
  tl_in_pool = false;

  const auto all_done = [&] {
    return job.done.load(std::memory_order_acquire) == static_cast<uint32_t>(job.chunks);
  };
  Clock::duration stalled{};
  if (!spin_until(all_done)) {
    const auto wait_began = Clock::now();
    s.note_worker_cpu();
    job.caller_asleep.store(true, std::memory_order_seq_cst);
    for (uint32_t seen = job.done.load(std::memory_order_seq_cst);
         seen != static_cast<uint32_t>(job.chunks); seen = job.done.load(std::memory_order_seq_cst))
      futex_wait(job.done, seen);
    const auto waited = Clock::now() - wait_began;
    if (waited >= kStraggleFloor && s.workers_stalled(waited)) stalled = waited;
  }
  s.judge(Clock::now() - began, stalled);
  // Withdraw the job; a worker that announced itself before may still be
  // reading it (it finds no chunk left and leaves at once).
  s.current.store(nullptr, std::memory_order_seq_cst);
  while (s.users.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  lock.unlock();
  if (job.error) std::rethrow_exception(job.error);
}

namespace {

std::mutex g_pool_mutex;
std::unique_ptr<ThreadPool> g_pool;          // owned here, replaced under the mutex
std::atomic<ThreadPool*> g_current{nullptr};  // read without the lock by every kernel
bool g_threads_chosen = false;                // by configure_threads(), not the default

}  // namespace

ThreadPool& default_pool() {
  if (ThreadPool* pool = g_current.load(std::memory_order_acquire)) return *pool;
  std::lock_guard lock(g_pool_mutex);
  if (!g_pool) g_pool = std::make_unique<ThreadPool>(available_cpus());
  g_current.store(g_pool.get(), std::memory_order_release);
  return *g_pool;
}

void configure_threads(int threads, Pinning pinning) {
  require(threads >= 0, ErrorKind::invalid_argument,
          "the CPU thread count must be >= 0 (0: the CPUs this process may run on), got " +
              std::to_string(threads));
  std::lock_guard lock(g_pool_mutex);
  g_current.store(nullptr, std::memory_order_release);
  g_pool.reset();  // joins the old workers first
  g_pool = std::make_unique<ThreadPool>(threads == 0 ? available_cpus() : threads, pinning);
  g_threads_chosen = threads != 0;
  g_current.store(g_pool.get(), std::memory_order_release);
}

std::string describe_threads() {
  const ThreadPool& pool = default_pool();
  std::lock_guard lock(g_pool_mutex);
  const int n = pool.threads();
  return std::to_string(n) + (n == 1 ? " thread" : " threads") +
         (g_threads_chosen ? "" : " (the CPUs this process may run on)") +
         (pool.pinning() == Pinning::cores ? ", workers pinned to cores" : ", no pinning");
}

}  // namespace tandem::cpu
