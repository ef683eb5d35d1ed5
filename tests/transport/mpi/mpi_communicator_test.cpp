// MpiCommunicator with 4 ranks: collectives with closed-form answers (each
// rank contributes its rank number), broadcasts of differing sizes,
// point-to-point ordering per tag, receive and send timeouts, and
// sub-communicators.
//
// Every rank runs every case. A case never leaves early on one rank only
// (no ASSERT before a collective that the others would still enter), or
// the others would wait in that collective until ctest's timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "tests/support/mpi/mpi_world.h"
#include "transport/mpi_communicator.h"
#include "transport/mpi_runtime.h"

namespace tandem {
namespace {

using test_support::mpi_world;
using Clock = std::chrono::steady_clock;

Bytes text_bytes(const std::string& text) {
  Bytes bytes(text.size());
  for (size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

std::string text_of(const std::optional<Bytes>& bytes) {
  if (!bytes) return "<nothing>";
  std::string text(bytes->size(), '\0');
  for (size_t i = 0; i < bytes->size(); ++i) text[i] = static_cast<char>((*bytes)[i]);
  return text;
}

// Bytes whose content depends on seed and position, to check a transfer.
Bytes pattern(size_t size, int seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 31 + seed * 7) & 0xFF);
  return bytes;
}

TEST(MpiCommunicator, LaunchedByMpiWithFourRanks) {
  EXPECT_TRUE(MpiRuntime::launched_by_mpi());
  ASSERT_EQ(mpi_world().size(), 4) << "run this binary with mpiexec -n 4";
}

TEST(MpiCommunicator, AllReduceSum) {
  Communicator& world = mpi_world();
  const int n = world.size();
  // data[i] = rank + i on each rank: the sum is Σ ranks + n·i, exact in floats.
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(world.rank()) + static_cast<float>(i);
  world.all_reduce_sum(data);
  const float rank_sum = static_cast<float>(n * (n - 1) / 2);
  int wrong = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    wrong += data[i] != rank_sum + static_cast<float>(n) * static_cast<float>(i);
  }
  EXPECT_EQ(wrong, 0);
  std::vector<float> empty;
  world.all_reduce_sum(empty);  // a no-op, on every rank together
}

TEST(MpiCommunicator, AllGatherInRankOrder) {
  Communicator& world = mpi_world();
  const std::vector<float> mine = {world.rank() * 10.0f, world.rank() * 10.0f + 1, world.rank() * 10.0f + 2};
  std::vector<float> all(mine.size() * static_cast<size_t>(world.size()), -1.0f);
  world.all_gather(mine, all);
  for (int r = 0; r < world.size(); ++r) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(all[static_cast<size_t>(r * 3 + i)], r * 10.0f + i);
  }
  std::vector<float> wrong_size(2);
  EXPECT_THROW(world.all_gather(mine, wrong_size), Error);  // checked before MPI is called
}

TEST(MpiCommunicator, GatherToRootOnly) {
  Communicator& world = mpi_world();
  for (int root = 0; root < world.size(); ++root) {
    const std::vector<float> mine = {static_cast<float>(world.rank()), 0.5f};
    std::vector<float> all(world.rank() == root ? 2 * static_cast<size_t>(world.size()) : 0, -1.0f);
    world.gather(mine, all, root);
    if (world.rank() == root) {
      for (int r = 0; r < world.size(); ++r) {
        EXPECT_EQ(all[2 * static_cast<size_t>(r)], static_cast<float>(r));
        EXPECT_EQ(all[2 * static_cast<size_t>(r) + 1], 0.5f);
      }
    }
  }
}

TEST(MpiCommunicator, BroadcastBytesOfDifferingSizes) {
  Communicator& world = mpi_world();
  for (int root = 0; root < world.size(); ++root) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{1000}, size_t{3} << 20}) {
      // Every rank starts with a buffer of another size and content.
      Bytes bytes = world.rank() == root ? pattern(size, root) : pattern(13 * static_cast<size_t>(world.rank()), 99);
      world.broadcast(bytes, root);
      EXPECT_EQ(bytes, pattern(size, root)) << "root " << root << ", " << size << " bytes";
    }
  }
}

TEST(MpiCommunicator, MessagesArriveInOrderPerTag) {
  Communicator& world = mpi_world();
  const int next = (world.rank() + 1) % world.size();
  const int previous = (world.rank() + world.size() - 1) % world.size();
  // Around a ring, two tags interleaved; small messages, so sends complete
  // before the matching receives are posted.
  for (int k = 0; k < 10; ++k) {
    world.send(text_bytes("a" + std::to_string(k)), next, 101);
    world.send(text_bytes("b" + std::to_string(k)), next, 102);
  }
  // Tag 102 first: the receiver picks by tag, not by arrival.
  for (int k = 0; k < 10; ++k) EXPECT_EQ(text_of(world.receive(previous, 102, 10.0)), "b" + std::to_string(k));
  for (int k = 0; k < 10; ++k) EXPECT_EQ(text_of(world.receive(previous, 101, 10.0)), "a" + std::to_string(k));
  EXPECT_EQ(world.receive(previous, 101, 0.0), std::nullopt);
}

TEST(MpiCommunicator, LargeAndEmptyMessages) {
  Communicator& world = mpi_world();
  // Even ranks send to the odd rank after them: a 5 MiB message (which MPI
  // sends by rendezvous) and an empty one.
  if (world.rank() % 2 == 0) {
    world.send(pattern(5 << 20, world.rank()), world.rank() + 1, 103);
    world.send(Bytes{}, world.rank() + 1, 104);
  } else {
    EXPECT_EQ(world.receive(world.rank() - 1, 103, 30.0), pattern(5 << 20, world.rank() - 1));
    EXPECT_EQ(world.receive(world.rank() - 1, 104, 30.0), Bytes{});
  }
}

TEST(MpiCommunicator, FloatsPointToPointArriveExactlyAndInOrder) {
  Communicator& world = mpi_world();
  EXPECT_FALSE(world.floats_on_device());  // host memory, like its collectives
  // Even ranks send the odd rank after them two runs of floats: 2 MiB (by
  // rendezvous) and 3; they arrive bit for bit, in the order sent.
  std::vector<float> large(1 << 19), small = {-0.0f, 1e-38f, 3.5f};
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<float>(i) * 0.25f + world.rank();
  if (world.rank() % 2 == 0) {
    world.send_floats(large, world.rank() + 1);
    world.send_floats(small, world.rank() + 1);
  } else {
    for (float& x : large) x -= 1;  // the sender's values
    std::vector<float> got_large(large.size()), got_small(small.size());
    world.receive_floats(got_large, world.rank() - 1);
    world.receive_floats(got_small, world.rank() - 1);
    EXPECT_EQ(got_large, large);
    EXPECT_EQ(std::memcmp(got_small.data(), small.data(), sizeof(float) * 3), 0);
  }
}

TEST(MpiCommunicator, ReceivingAnotherCountOfFloatsIsAnError) {
  Communicator& world = mpi_world();
  if (world.rank() % 2 == 0) {
    world.send_floats(std::vector<float>{1, 2, 3}, world.rank() + 1);
  } else {
    std::vector<float> two(2);
    EXPECT_THAT([&] { world.receive_floats(two, world.rank() - 1); },
                testing::ThrowsMessage<Error>(testing::HasSubstr("sent 3 floats, 2 were expected")));
  }
}

TEST(MpiCommunicator, ReceiveWaitsForeverWhenTimeoutIsNegative) {
  Communicator& world = mpi_world();
  if (world.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    world.send(text_bytes("late"), 1, 105);
  } else if (world.rank() == 1) {
    EXPECT_EQ(text_of(world.receive(0, 105, -1.0)), "late");
  }
}

TEST(MpiCommunicator, ReceiveTimesOutWithNothingSent) {
  Communicator& world = mpi_world();
  const int other = (world.rank() + 1) % world.size();
  Clock::time_point start = Clock::now();
  EXPECT_EQ(world.receive(other, 106, 0.0), std::nullopt);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));

  start = Clock::now();
  EXPECT_EQ(world.receive(other, 106, 0.3), std::nullopt);
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(5));  // generous: 4 ranks share 2 cores
}

TEST(MpiCommunicator, SendWithinGivesUpOnAPeerNotTakingItAndTheMessageStillArrivesWhole) {
  // Even ranks send 5 MiB (by rendezvous: it goes only once the receiver
  // takes it) to the odd rank after them, which is busy for a second
  // first. The send gives up at its timeout; the caller's buffer is then
  // overwritten and freed, and the receiver still gets the bytes sent.
  Communicator& world = mpi_world();
  const int tag = 109;
  if (world.rank() % 2 == 0) {
    const int peer = world.rank() + 1;
    EXPECT_TRUE(world.send_within(text_bytes("ready?"), peer, tag, 10.0));  // taken eagerly
    auto large = std::make_unique<Bytes>(pattern(5 << 20, world.rank()));
    const Clock::time_point start = Clock::now();
    EXPECT_FALSE(world.send_within(*large, peer, tag, 0.3));
    const auto waited = Clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(300));
    EXPECT_LT(waited, std::chrono::seconds(5));
    std::fill(large->begin(), large->end(), std::byte{0});
    large.reset();
    // Waiting here keeps MPI going, so the given-up send completes.
    EXPECT_EQ(text_of(world.receive(peer, tag, 30.0)), "got it");
  } else {
    const int peer = world.rank() - 1;
    EXPECT_EQ(text_of(world.receive(peer, tag, 10.0)), "ready?");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_EQ(world.receive(peer, tag, 30.0), pattern(5 << 20, peer));
    world.send(text_bytes("got it"), peer, tag);
  }
}

// CPU time of the calling thread (Linux), to see that waiting sleeps.
double thread_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

TEST(MpiCommunicator, WaitingInReceiveDoesNotBurnACore) {
  // An idle worker waits in receive() for minutes; spinning there would take
  // a core from the ranks doing work.
  Communicator& world = mpi_world();
  const double cpu_before = thread_cpu_seconds();
  EXPECT_EQ(world.receive((world.rank() + 1) % world.size(), 108, 1.0), std::nullopt);
  EXPECT_LT(thread_cpu_seconds() - cpu_before, 0.25) << "CPU seconds spent waiting 1 s";
}

TEST(MpiCommunicator, BadPeersAreErrorsNotMpiAborts) {
  Communicator& world = mpi_world();
  EXPECT_THROW(world.send(text_bytes("x"), world.size(), 1), Error);
  EXPECT_THROW(world.receive(-1, 1, 0.0), Error);
  Bytes bytes;
  EXPECT_THROW(world.broadcast(bytes, 7), Error);
  const int duplicate[] = {0, 0};
  EXPECT_THROW(world.split(duplicate), Error);  // every rank throws alike: no collective
}

TEST(MpiCommunicator, SplitTwoThree) {
  Communicator& world = mpi_world();
  const int members[] = {2, 3};
  std::unique_ptr<Communicator> sub = world.split(members);
  if (world.rank() < 2) {
    EXPECT_EQ(sub, nullptr);
    return;
  }
  ASSERT_NE(sub, nullptr);  // both members take this path alike
  EXPECT_EQ(sub->size(), 2);
  EXPECT_EQ(sub->rank(), world.rank() - 2);
  std::vector<float> data = {static_cast<float>(world.rank())};
  sub->all_reduce_sum(data);
  EXPECT_EQ(data[0], 5.0f);  // world ranks 2 + 3
  Bytes bytes = sub->rank() == 1 ? text_bytes("from world rank 3") : Bytes{};
  sub->broadcast(bytes, 1);
  EXPECT_EQ(text_of(bytes), "from world rank 3");
  // Point to point in sub ranks, apart from the world's messages.
  if (sub->rank() == 0) {
    sub->send(text_bytes("hello"), 1, 107);
  } else {
    EXPECT_EQ(text_of(sub->receive(0, 107, 10.0)), "hello");
  }
}

TEST(MpiCommunicator, SplitOneTwoThree) {
  Communicator& world = mpi_world();
  const int members[] = {1, 2, 3};
  std::unique_ptr<Communicator> sub = world.split(members);
  if (world.rank() == 0) {
    EXPECT_EQ(sub, nullptr);
    return;
  }
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 3);
  EXPECT_EQ(sub->rank(), world.rank() - 1);
  const std::vector<float> mine = {static_cast<float>(world.rank())};
  std::vector<float> all(3);
  sub->all_gather(mine, all);
  EXPECT_EQ(all, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  std::vector<float> gathered(sub->rank() == 0 ? 3 : 0);
  sub->gather(mine, gathered, 0);
  if (sub->rank() == 0) {
    EXPECT_EQ(gathered, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  }
}

TEST(MpiCommunicator, SplitNumbersRanksInTheOrderGiven) {
  Communicator& world = mpi_world();
  const int reversed[] = {3, 2, 1, 0};
  std::unique_ptr<Communicator> sub = world.split(reversed);
  ASSERT_NE(sub, nullptr);  // every rank is a member
  EXPECT_EQ(sub->rank(), 3 - world.rank());
  std::vector<float> all(4);
  const std::vector<float> mine = {static_cast<float>(world.rank())};
  sub->all_gather(mine, all);
  EXPECT_EQ(all, (std::vector<float>{3.0f, 2.0f, 1.0f, 0.0f}));
  EXPECT_EQ(world.split({}), nullptr);
}

TEST(MpiCommunicator, AllRanksPassedEveryCase) {
  // The verdict all ranks agree on (nccl-tests style): failed cases summed
  // over ranks, so rank 0's report shows a failure on any rank.
  Communicator& world = mpi_world();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  std::vector<float> failed = {static_cast<float>(unit.failed_test_count())};
  world.all_reduce_sum(failed);
  EXPECT_EQ(failed[0], 0.0f) << "cases failed on some rank: see its [rank N] lines";
}

}  // namespace
}  // namespace tandem
