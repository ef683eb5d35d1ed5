// NcclCommunicator under mpiexec, one GPU per rank: the float collectives on
// device buffers against exact answers (small integers in floats, so every
// sum is exact whatever order NCCL adds in), the host-byte methods passed
// through, checks that throw before NCCL is called, split(), and a
// collective that leaves another thread's CUDA graph capture intact.
//
// NCCL does not support two ranks of one communicator on one GPU, so each
// rank takes the GPU of its local rank on its host; with fewer GPUs than
// that, or none, every case reports "skipped: ..." (ctest shows the test as
// skipped). The decision is made once, by all ranks together, so that no
// rank enters a collective that another skipped.
//
// Every rank runs every case; no ASSERT before a collective that the
// other ranks would still enter (see tests/transport/mpi/).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tests/support/mpi/mpi_world.h"
#include "transport/nccl_communicator.h"

namespace tandem {
namespace {

using test_support::mpi_world;

void cuda_or_throw(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
}

// A float array in GPU memory, filled from and read back to host vectors.
class DeviceFloats {
 public:
  explicit DeviceFloats(size_t count) : count_(count) {
    cuda_or_throw(cudaMalloc(&data_, std::max<size_t>(count, 1) * sizeof(float)), "cudaMalloc");
  }
  explicit DeviceFloats(const std::vector<float>& host) : DeviceFloats(host.size()) {
    cuda_or_throw(
        cudaMemcpy(data_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy to device");
    // From pageable memory cudaMemcpy may return before the data has landed;
    // the communicator takes finished floats only (communicator.h).
    cuda_or_throw(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  ~DeviceFloats() { cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  std::span<float> span() { return {data_, count_}; }
  std::vector<float> to_host() const {
    std::vector<float> host(count_);
    cuda_or_throw(cudaMemcpy(host.data(), data_, count_ * sizeof(float), cudaMemcpyDeviceToHost),
                  "cudaMemcpy to host");
    return host;
  }

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
};

// This rank's index among the ranks on its host, from the launcher.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return mpi_world().rank();  // no launcher said: assume one host
}

int visible_devices() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;  // no driver: none
}

// data[i] = rank + (i mod 4096): the sum over ranks is exact in floats.
float contribution(int rank, size_t i) {
  return static_cast<float>(rank) + static_cast<float>(i % 4096);
}

class NcclCommunicatorTest : public testing::Test {
 protected:
  // Once for the suite: NCCL setup takes a while, and the group must be
  // gone before main() finalizes MPI (TearDownTestSuite runs before that).
  static void SetUpTestSuite() {
    Communicator& world = mpi_world();
    // Every rank's (GPUs it sees, GPUs it needs), so all decide alike.
    const std::vector<float> mine = {static_cast<float>(visible_devices()),
                                     static_cast<float>(local_rank() + 1)};
    std::vector<float> all(2 * static_cast<size_t>(world.size()));
    world.all_gather(mine, all);
    float fewest = all[0], most_needed = all[1];
    for (size_t r = 0; r < all.size(); r += 2) {
      fewest = std::min(fewest, all[r]);
      most_needed = std::max(most_needed, all[r + 1]);
    }
    if (fewest == 0) {
      skip_reason_ = "skipped: no CUDA device";
      return;
    }
    if (fewest < most_needed) {
      skip_reason_ = "skipped: needs " + std::to_string(static_cast<int>(most_needed)) +
                     " CUDA devices on a host, found " + std::to_string(static_cast<int>(fewest)) +
                     " (NCCL takes one GPU per rank)";
      return;
    }
    std::vector<int> everyone(static_cast<size_t>(world.size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    try {
      group_ = make_nccl_communicator(world.split(everyone), local_rank());
    } catch (const std::exception& error) {
      setup_failure_ = error.what();
    }
  }
  static void TearDownTestSuite() { group_.reset(); }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    if (group_ == nullptr) FAIL() << "NcclCommunicator setup failed: " << setup_failure_;
  }

  static Communicator& group() { return *group_; }

 private:
  static inline std::unique_ptr<Communicator> group_;
  static inline std::string skip_reason_;
  static inline std::string setup_failure_;
};

TEST_F(NcclCommunicatorTest, RanksMatchTheWorld) {
  EXPECT_EQ(group().rank(), mpi_world().rank());
  EXPECT_EQ(group().size(), mpi_world().size());
}

TEST_F(NcclCommunicatorTest, AllReduceSumIsExact) {
  const int n = group().size();
  const int rank = group().rank();
  // Small and large (past NCCL's chunk sizes, odd length).
  for (const size_t count : {size_t{1}, size_t{1000}, (size_t{1} << 20) + 3}) {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = contribution(rank, i);
    DeviceFloats data(host);
    group().all_reduce_sum(data.span());
    const std::vector<float> sum = data.to_host();
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      const float expected = static_cast<float>(n * (n - 1) / 2) +
                             static_cast<float>(n) * static_cast<float>(i % 4096);
      wrong += sum[i] != expected;
    }
    EXPECT_EQ(wrong, 0u) << count << " floats";
  }
  group().all_reduce_sum({});  // a no-op on every rank together
}

TEST_F(NcclCommunicatorTest, AllGatherInRankOrder) {
  const int n = group().size();
  const size_t count = 257;
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i)
    host[i] = static_cast<float>(group().rank() * 1000 + static_cast<int>(i));
  DeviceFloats mine(host);
  DeviceFloats all(count * static_cast<size_t>(n));
  group().all_gather(mine.span(), all.span());
  const std::vector<float> gathered = all.to_host();
  size_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      wrong += gathered[static_cast<size_t>(r) * count + i] !=
               static_cast<float>(r * 1000 + static_cast<int>(i));
    }
  }
  EXPECT_EQ(wrong, 0u);
}

TEST_F(NcclCommunicatorTest, GatherToEachRoot) {
  const int n = group().size();
  const size_t count = 333;
  for (int root = 0; root < n; ++root) {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i)
      host[i] = static_cast<float>(group().rank() * 10000 + static_cast<int>(i));
    DeviceFloats mine(host);
    const bool is_root = group().rank() == root;
    DeviceFloats all(is_root ? count * static_cast<size_t>(n) : 0);
    group().gather(mine.span(), is_root ? all.span() : std::span<float>(), root);
    if (!is_root) continue;
    const std::vector<float> gathered = all.to_host();
    size_t wrong = 0;
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        wrong += gathered[static_cast<size_t>(r) * count + i] !=
                 static_cast<float>(r * 10000 + static_cast<int>(i));
      }
    }
    EXPECT_EQ(wrong, 0u) << "root " << root;
  }
}

TEST_F(NcclCommunicatorTest, BadArgumentsThrowBeforeNcclOnEveryRank) {
  // Each check fails alike on every rank, so no rank is left in NCCL.
  std::vector<float> host_memory(16, 1.0f);
  EXPECT_THROW(group().all_reduce_sum(host_memory), Error);  // not GPU memory
  DeviceFloats mine(4);
  DeviceFloats too_small(1);
  EXPECT_THROW(group().all_gather(mine.span(), too_small.span()), Error);
  const int no_such_root = group().size();
  EXPECT_THROW(group().gather(mine.span(), too_small.span(), no_such_root), Error);
  // The communicator is still usable after them.
  DeviceFloats ones(std::vector<float>(8, 1.0f));
  group().all_reduce_sum(ones.span());
  EXPECT_EQ(ones.to_host(), std::vector<float>(8, static_cast<float>(group().size())));
}

TEST_F(NcclCommunicatorTest, HostBytesGoThroughTheHostCommunicator) {
  const int n = group().size();
  const int rank = group().rank();
  Bytes bytes(rank == 0 ? 5 : 1, std::byte{7});
  group().broadcast(bytes, 0);
  EXPECT_EQ(bytes, Bytes(5, std::byte{7}));
  // A ring: each rank sends its rank to the next and hears from the previous.
  const Bytes out = {static_cast<std::byte>(rank)};
  group().send(out, (rank + 1) % n, /*tag=*/42);
  const std::optional<Bytes> in = group().receive((rank + n - 1) % n, 42, /*timeout_seconds=*/30);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(*in, Bytes{static_cast<std::byte>((rank + n - 1) % n)});
}

TEST_F(NcclCommunicatorTest, FloatsGoGpuToGpuInOrder) {
  // Around a ring: each rank sends the next a large run and a small one
  // (device memory to device memory), and takes the previous rank's.
  EXPECT_TRUE(group().floats_on_device());
  const int n = group().size();
  const int rank = group().rank();
  const size_t large = size_t{3} << 20;
  auto run_of = [](int sender, size_t count) {
    std::vector<float> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = contribution(sender, i);
    return values;
  };
  DeviceFloats out_large(run_of(rank, large)), out_small(run_of(rank + 100, 5));
  DeviceFloats in_large(large), in_small(5);
  const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
  if (n == 1) {
    // One rank: a send to itself would wait for its own receive.
    EXPECT_EQ(out_large.to_host(), run_of(0, large));
    return;
  }
  // Even ranks send first, odd ranks receive first: NCCL point to point
  // waits for its peer, so a ring where all send first would deadlock.
  if (rank % 2 == 0) {
    group().send_floats(out_large.span(), next);
    group().send_floats(out_small.span(), next);
    group().receive_floats(in_large.span(), previous);
    group().receive_floats(in_small.span(), previous);
  } else {
    group().receive_floats(in_large.span(), previous);
    group().receive_floats(in_small.span(), previous);
    group().send_floats(out_large.span(), next);
    group().send_floats(out_small.span(), next);
  }
  EXPECT_EQ(in_large.to_host(), run_of(previous, large));
  EXPECT_EQ(in_small.to_host(), run_of(previous + 100, 5));
  // Host memory is refused before NCCL is called.
  std::vector<float> host(4);
  EXPECT_THROW(group().send_floats(host, next), Error);
}

TEST_F(NcclCommunicatorTest, ACollectiveLeavesAGraphCaptureOnAnotherThreadIntact) {
  // A draft sharing this GPU records its step graphs by stream capture on
  // a thread of its own while the target's collectives run: a collective
  // that waited for the whole device (cudaDeviceSynchronize) would wait on
  // the capturing stream, which invalidates the capture.
  DeviceFloats scratch(256);
  DeviceFloats ones(std::vector<float>(1000, 1.0f));
  std::atomic<int> phase{0};  // 1: capturing; 2: the collective is over
  cudaError_t begun = cudaErrorUnknown, ended = cudaErrorUnknown;
  std::thread drafter([&] {
    cudaSetDevice(local_rank());
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    cudaMemsetAsync(scratch.span().data(), 0, 256 * sizeof(float), stream);
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    cudaGraph_t graph = nullptr;
    ended = cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  });
  while (phase.load() != 1) std::this_thread::yield();
  std::string failure;
  try {
    group().all_reduce_sum(ones.span());
  } catch (const std::exception& error) {
    failure = error.what();
  }
  phase = 2;
  drafter.join();
  EXPECT_EQ(failure, "");
  EXPECT_EQ(begun, cudaSuccess) << cudaGetErrorString(begun);
  EXPECT_EQ(ended, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorString(ended);
  EXPECT_EQ(ones.to_host(), std::vector<float>(1000, static_cast<float>(group().size())));
}

TEST_F(NcclCommunicatorTest, SplitGivesAnNcclGroup) {
  const int n = group().size();
  std::vector<int> reversed(static_cast<size_t>(n));
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  std::unique_ptr<Communicator> sub = group().split(reversed);
  const bool member = sub != nullptr;  // every rank is
  EXPECT_TRUE(member);
  if (member) {
    EXPECT_EQ(sub->rank(), n - 1 - group().rank());
    DeviceFloats mine(std::vector<float>{static_cast<float>(group().rank())});
    DeviceFloats all(static_cast<size_t>(n));
    sub->all_gather(mine.span(), all.span());  // device memory: an NCCL group
    std::vector<float> expected(static_cast<size_t>(n));
    std::iota(expected.rbegin(), expected.rend(), 0.0f);
    EXPECT_EQ(all.to_host(), expected);
  }
  // Rank 0 alone: the others get nullptr and take no part.
  std::unique_ptr<Communicator> solo = group().split(std::vector<int>{0});
  EXPECT_EQ(solo != nullptr, group().rank() == 0);
  if (solo != nullptr) {
    DeviceFloats twos(std::vector<float>(3, 2.0f));
    solo->all_reduce_sum(twos.span());
    EXPECT_EQ(twos.to_host(), std::vector<float>(3, 2.0f));
  }
}

TEST(NcclVerdict, AllRanksPassedEveryCase) {
  // Failed cases summed over ranks (on the host), so that rank 0's report
  // shows a failure on any rank.
  std::vector<float> failed = {
      static_cast<float>(testing::UnitTest::GetInstance()->failed_test_count())};
  mpi_world().all_reduce_sum(failed);
  EXPECT_EQ(failed[0], 0.0f) << "cases failed on some rank: see its [rank N] lines";
}

}  // namespace
}  // namespace tandem
