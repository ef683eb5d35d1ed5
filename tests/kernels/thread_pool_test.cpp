// The CPU kernels' thread pool: every index exactly once whatever the
// thread count, nested and contended calls run serially, a body's exception
// reaches the caller, many quick sections and more threads than CPUs do not
// deadlock, and destruction joins every worker. Then the property the pool
// exists to keep: the matmul and the norm give the same bits with 1, 2, 3
// or 5 threads. Last, the fallback to the caller alone: for workers that
// stall, and for threads that share one core.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/run_queue_wait.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using cpu::Pinning;
using cpu::ThreadPool;

// Runs body(i) for i in [0, n) on `pool`.
template <class Body>
void for_each_index(ThreadPool& pool, int64_t n, Body body) {
  auto ranges = [&body](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  };
  pool.run(n, cpu::RangeBody(ranges));
}

TEST(ThreadPool, VisitsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 19, 64, 1000, 100003}) {
      std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
      for_each_index(pool, n, [&](int64_t i) { visits[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << "threads " << threads << ", n " << n
                                                             << ", index " << i;
    }
  }
}

TEST(ThreadPool, ChunksAreTheFixedPartitionOfN) {
  ThreadPool pool(3);
  const int64_t n = 1001;
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> seen;
  auto record = [&](int64_t begin, int64_t end) {
    std::lock_guard lock(mutex);
    seen.emplace_back(begin, end);
  };
  pool.run(n, cpu::RangeBody(record));
  std::sort(seen.begin(), seen.end());
  const int64_t chunks = ThreadPool::chunk_count(n, 3);
  ASSERT_EQ(static_cast<int64_t>(seen.size()), chunks);
  for (int64_t c = 0; c < chunks; ++c) {
    EXPECT_EQ(seen[static_cast<size_t>(c)].first, n * c / chunks);
    EXPECT_EQ(seen[static_cast<size_t>(c)].second, n * (c + 1) / chunks);
  }
}

// A chunk count asked for (parallel_for_each asks for one per index) is
// the same fixed partition with that many chunks, capped at n.
TEST(ThreadPool, AskedChunksPartitionNThatManyWays) {
  ThreadPool pool(3);
  for (const auto& [n, asked, expected] : {std::tuple{1001, 1001, 1001}, std::tuple{100, 7, 7}, std::tuple{5, 9, 5}}) {
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> seen;
    auto record = [&](int64_t begin, int64_t end) {
      std::lock_guard lock(mutex);
      seen.emplace_back(begin, end);
    };
    pool.run(n, cpu::RangeBody(record), asked);
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(static_cast<int64_t>(seen.size()), expected) << "n " << n << ", asked " << asked;
    for (int64_t c = 0; c < expected; ++c) {
      EXPECT_EQ(seen[static_cast<size_t>(c)].first, n * c / expected);
      EXPECT_EQ(seen[static_cast<size_t>(c)].second, n * (c + 1) / expected);
    }
  }
}

// Each thread claims its own share's chunks in order before anyone else's:
// with 2 threads and 8 chunks the caller's share is chunks 0-3, so it runs
// 0 and then 1 (claimed from one shared counter, the awake worker took 1).
// The chunks are long (10 ms) so that the worker, once awake, would claim
// one while the caller runs chunk 0; the worker could take chunk 1 only by
// finishing its own four chunks first.
TEST(ThreadPool, TheCallerRunsTheStartOfItsOwnShareInOrder) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<std::thread::id> ran_on(8);
  auto record = [&](int64_t begin, int64_t end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard lock(mutex);
    for (int64_t i = begin; i < end; ++i) ran_on[static_cast<size_t>(i)] = std::this_thread::get_id();
  };
  pool.run(8, cpu::RangeBody(record), 8);
  EXPECT_EQ(ran_on[0], caller);
  EXPECT_EQ(ran_on[1], caller);
}

TEST(ThreadPool, NestedCallRunsSeriallyOnTheSameThread) {
  ThreadPool pool(4);
  std::atomic<int> inner_total{0};
  std::atomic<int> inner_on_other_thread{0};
  for_each_index(pool, 16, [&](int64_t) {
    const auto outer = std::this_thread::get_id();
    for_each_index(pool, 10, [&](int64_t i) {
      inner_total.fetch_add(static_cast<int>(i));
      if (std::this_thread::get_id() != outer) inner_on_other_thread.fetch_add(1);
    });
  });
  EXPECT_EQ(inner_total.load(), 16 * 45);
  EXPECT_EQ(inner_on_other_thread.load(), 0);
}

TEST(ThreadPool, TwoCallingThreadsShareOnePoolSafely) {
  ThreadPool pool(3);
  std::atomic<int64_t> sums[2] = {0, 0};
  auto caller = [&](int which) {
    for (int round = 0; round < 300; ++round)
      for_each_index(pool, 100, [&](int64_t i) { sums[which].fetch_add(i); });
  };
  std::thread a(caller, 0), b(caller, 1);
  a.join();
  b.join();
  EXPECT_EQ(sums[0].load(), 300 * 4950);
  EXPECT_EQ(sums[1].load(), 300 * 4950);
}

TEST(ThreadPool, ExceptionReachesTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(for_each_index(pool, 200,
                              [](int64_t i) {
                                if (i == 77) throw std::runtime_error("index 77");
                              }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  for_each_index(pool, 200, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 199 * 200 / 2);
}

TEST(ThreadPool, ManyRapidSections) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 20000; ++round)
    for_each_index(pool, 8, [&](int64_t i) { total.fetch_add(i + 1); });
  EXPECT_EQ(total.load(), int64_t{20000} * 36);
}

TEST(ThreadPool, MoreThreadsThanCpusFinish) {
  // Four times the CPUs: workers are mostly off-CPU and must not be waited
  // for (the others take their chunks); ctest's timeout catches a deadlock.
  ThreadPool pool(4 * cpu::available_cpus() + 1);
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 2000; ++round)
    for_each_index(pool, 64, [&](int64_t) { total.fetch_add(1); });
  EXPECT_EQ(total.load(), int64_t{2000} * 64);
}

size_t thread_count_of_process() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++count;
  return count;
}

// The count once it equals `expected`, or after 2 s: a joined thread's
// /proc entry can outlive the join by a moment (the kernel wakes the joiner
// before it reaps the task), so a count read at once can be one high.
size_t thread_count_settled_at(size_t expected) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t count = thread_count_of_process();
  while (count != expected && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    count = thread_count_of_process();
  }
  return count;
}

TEST(ThreadPool, DestructionJoinsEveryWorker) {
  const size_t before = thread_count_of_process();
  for (int round = 0; round < 50; ++round) {
    ThreadPool pool(4);
    EXPECT_EQ(thread_count_settled_at(before + 3), before + 3);
    if (round % 2 == 0) for_each_index(pool, 32, [](int64_t) {});
  }
  EXPECT_EQ(thread_count_settled_at(before), before);
}

TEST(ThreadPool, PinnedWorkersEachRunOnOneCpu) {
  ThreadPool pool(2, Pinning::cores);
  EXPECT_EQ(pool.pinning(), Pinning::cores);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> wrong{0};
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 200; ++round) {
    for_each_index(pool, 64, [&](int64_t i) {
      sum.fetch_add(i);
      if (std::this_thread::get_id() == caller) return;
      cpu_set_t set;
      CPU_ZERO(&set);
      pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
      if (CPU_COUNT(&set) != 1) wrong.fetch_add(1);
    });
  }
  EXPECT_EQ(sum.load(), int64_t{200} * 2016);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ThreadPool, ConfigureThreadsReplacesTheDefaultPool) {
  cpu::configure_threads(3, Pinning::none);
  EXPECT_EQ(cpu::default_pool().threads(), 3);
  EXPECT_EQ(cpu::describe_threads(), "3 threads, no pinning");
  cpu::configure_threads(0, Pinning::cores);
  EXPECT_EQ(cpu::default_pool().threads(), cpu::available_cpus());
  EXPECT_NE(cpu::describe_threads().find("(the CPUs this process may run on), workers pinned"),
            std::string::npos);
  EXPECT_THROW(cpu::configure_threads(-1, Pinning::none), Error);
  std::atomic<int64_t> sum{0};
  cpu::parallel_for(1000, true, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

TEST(ThreadPool, KernelsGiveTheSameBitsWhateverTheThreadCount) {
  // Large enough that every op takes its parallel path.
  const int T = 37, Kin = 257, N = 515, C = 4096;
  const auto x = test_support::random_normal(static_cast<size_t>(T) * Kin, 1);
  const auto w = test_support::random_normal(static_cast<size_t>(N) * Kin, 2);
  const auto rows = test_support::random_normal(static_cast<size_t>(T) * C, 3);
  const auto weight = test_support::random_normal(static_cast<size_t>(C), 4);
  std::vector<float> y1, norm1;
  for (int threads : {1, 2, 3, 5}) {
    cpu::configure_threads(threads, Pinning::none);
    std::vector<float> y(static_cast<size_t>(T) * N), norm(rows.size());
    cpu::matmul(x.data(), w.data(), nullptr, T, Kin, N, y.data());
    cpu::rmsnorm(rows.data(), weight.data(), T, C, 1e-5f, norm.data());
    if (threads == 1) {
      y1 = y;
      norm1 = norm;
      continue;
    }
    EXPECT_EQ(y, y1) << threads << " threads";
    EXPECT_EQ(norm, norm1) << threads << " threads";
  }
}

// Burns `duration` of CPU time on the calling thread (no sleeping: a
// thread that sleeps leaves its core to the other).
void spin_for(std::chrono::microseconds duration) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Workers that claim chunks and then stall (as when the scheduler gives
// their core to another process) for more than a quarter of a window of
// 256 sections send the next sections to the caller alone; after the
// period, the workers take chunks again.
TEST(ThreadPool, StragglersSendTheNextSectionsToTheCallerAlone) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  // A worker's index sleeps 1 ms (no CPU time: a straggler), the caller's
  // computes for 20 µs: the caller is done with its chunks long before the
  // worker's one chunk of 8 indices. (The caller's indices once slept 0.1
  // ms too; where a sleep overshoots by tens of microseconds, the caller's
  // seven chunks took as long as the worker's one and nothing stalled.)
  // Bounded: three windows at most (a worker still asleep when the caller
  // has taken every chunk takes none, and stalls nothing).
  for (int section = 0; section < 3 * 256 && pool.alone_periods() == 0; ++section) {
    for_each_index(pool, 64, [&](int64_t) {
      if (std::this_thread::get_id() != caller)
        std::this_thread::sleep_for(std::chrono::microseconds(1000));
      else
        spin_for(std::chrono::microseconds(20));
    });
  }
  ASSERT_EQ(pool.alone_periods(), 1);

  // The next 256 sections (kAloneFirst): every chunk on the caller.
  std::atomic<int> elsewhere{0};
  for (int section = 0; section < 256; ++section)
    for_each_index(pool, 64, [&](int64_t) {
      if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
    });
  EXPECT_EQ(elsewhere.load(), 0);

  // Then the workers come back: bounded, with chunks slow enough that a
  // woken worker finds some left.
  for (int section = 0; section < 2000 && elsewhere.load() == 0; ++section)
    for_each_index(pool, 64, [&](int64_t) {
      if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
  EXPECT_GT(elsewhere.load(), 0);
  EXPECT_EQ(pool.alone_periods(), 1);
}

TEST(RunQueueWait, ReadsAThreadsGrowingWaitOrNothing) {
  EXPECT_EQ(cpu::run_queue_wait_ns(-1), -1);
  const int handle = cpu::open_run_queue_wait();
  if (handle < 0) GTEST_SKIP() << "this kernel keeps no schedstat";
  const int64_t first = cpu::run_queue_wait_ns(handle);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int64_t second = cpu::run_queue_wait_ns(handle);
  cpu::close_run_queue_wait(handle);
  EXPECT_GE(first, 0);
  EXPECT_GE(second, first);
}

// With one busy process on a 2-core machine, the scheduler puts our two
// threads on one core; they take turns there and no worker is ever seen
// stalled, but both wait on the core's run queue. Here the caller joins the
// pinned worker's CPU: within three windows of 256 sections the next
// sections go to the caller alone.
TEST(ThreadPool, ThreadsSharingACoreSendTheNextSectionsToTheCallerAlone) {
  const int probe = cpu::open_run_queue_wait();
  cpu::close_run_queue_wait(probe);
  if (probe < 0) GTEST_SKIP() << "this kernel keeps no schedstat";
  const std::vector<int> cpus = cpu::allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  ThreadPool pool(2, Pinning::cores);  // the worker on cpus[1 % count]
  cpu_set_t caller_before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(caller_before), &caller_before), 0);
  cpu_set_t shared;
  CPU_ZERO(&shared);
  CPU_SET(cpus[1 % cpus.size()], &shared);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(shared), &shared), 0);
  for (int section = 0; section < 3 * 256 && pool.alone_periods() == 0; ++section)
    for_each_index(pool, 8, [](int64_t) { spin_for(std::chrono::microseconds(20)); });
  pthread_setaffinity_np(pthread_self(), sizeof(caller_before), &caller_before);
  EXPECT_GE(pool.alone_periods(), 1);
}

}  // namespace
}  // namespace tandem
