// DelayedCommunicator (the test-only link delay) over 4 MPI ranks on this
// one machine, told that ranks 0 and 1 are on host "a" and ranks 2 and 3 on
// host "b": messages and collectives still carry exactly their data, and
// the model charges delays to the operations that cross hosts and to no
// other (modelled_delay_seconds; elapsed time is not asserted). Also: the
// world is wrapped only when the variable is set, and ranks that disagree
// about it all fail alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/support/mpi/mpi_world.h"
#include "transport/delayed_communicator.h"

namespace tandem {
namespace {

using test_support::mpi_world;

constexpr double kDelay = 0.0002;  // 0.2 ms: the cases stay fast

std::unique_ptr<DelayedCommunicator> two_hosts() {
  const int everyone[] = {0, 1, 2, 3};
  return std::make_unique<DelayedCommunicator>(mpi_world().split(everyone),
                                               LinkMap({"a", "a", "b", "b"}), kDelay);
}

Bytes pattern(size_t size, int seed) {
  Bytes bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 13 + seed) & 0xFF);
  return bytes;
}

TEST(DelayedCommunicator, MessagesArriveWholeAndOnlyRemoteOnesAreHeld) {
  std::unique_ptr<DelayedCommunicator> world = two_hosts();
  const int rank = world->rank();
  if (rank == 0) {
    for (int k = 0; k < 3; ++k) world->send(pattern(100 + k, k), 2, 201);  // to host b
    world->send(pattern(50, 9), 1, 201);                                    // same host
    world->send({}, 3, 202);                                                // empty, remote
  } else if (rank == 1) {
    EXPECT_EQ(world->receive(0, 201, 10.0), pattern(50, 9));
  } else if (rank == 2) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(world->receive(0, 201, 10.0), pattern(100 + k, k));
  } else {
    EXPECT_EQ(world->receive(0, 202, 10.0), Bytes{});
  }
  const double expected[] = {0, 0, 3 * kDelay, kDelay};  // one delay per remote message
  EXPECT_DOUBLE_EQ(world->modelled_delay_seconds(), expected[rank]);
}

TEST(DelayedCommunicator, FloatsPointToPointCrossHostsIntact) {
  std::unique_ptr<DelayedCommunicator> world = two_hosts();
  std::vector<float> rows = {1.5f, -2.0f, 3.25f};
  if (world->rank() == 1) world->send_floats(rows, 3);
  if (world->rank() == 3) {
    std::vector<float> got(3);
    world->receive_floats(got, 1);
    EXPECT_EQ(got, rows);
  }
}

TEST(DelayedCommunicator, CollectivesAcrossHostsCostCeilLog2Rounds) {
  std::unique_ptr<DelayedCommunicator> world = two_hosts();
  const int rank = world->rank();
  std::vector<float> sum = {static_cast<float>(rank)};
  world->all_reduce_sum(sum);
  EXPECT_EQ(sum[0], 6.0f);
  EXPECT_DOUBLE_EQ(world->modelled_delay_seconds(), 2 * kDelay);  // 4 ranks: 2 rounds

  std::vector<float> all(4);
  const std::vector<float> mine = {static_cast<float>(rank)};
  world->all_gather(mine, all);
  EXPECT_EQ(all, (std::vector<float>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(world->modelled_delay_seconds(), 4 * kDelay);

  // Gather: only the root receives, so only the root waits.
  std::vector<float> gathered(rank == 0 ? 4 : 0);
  world->gather(mine, gathered, 0);
  if (rank == 0) {
    EXPECT_EQ(gathered, (std::vector<float>{0, 1, 2, 3}));
  }
  EXPECT_DOUBLE_EQ(world->modelled_delay_seconds(), (rank == 0 ? 6 : 4) * kDelay);

  // Broadcast: everyone but the root receives.
  Bytes bytes = rank == 2 ? pattern(40, 2) : Bytes{};
  world->broadcast(bytes, 2);
  EXPECT_EQ(bytes, pattern(40, 2));
  EXPECT_DOUBLE_EQ(world->modelled_delay_seconds(), (rank == 0 ? 8 : rank == 2 ? 4 : 6) * kDelay);
}

TEST(DelayedCommunicator, SplitKeepsKnowingWhichPeersAreRemote) {
  std::unique_ptr<DelayedCommunicator> world = two_hosts();
  const int rank = world->rank();
  const int host_a[] = {0, 1};
  std::unique_ptr<Communicator> a = world->split(host_a);
  const int across[] = {1, 2};  // the pair that crosses: one round
  std::unique_ptr<Communicator> pair = world->split(across);
  if (rank < 2) {
    auto* sub = dynamic_cast<DelayedCommunicator*>(a.get());
    ASSERT_NE(sub, nullptr);
    EXPECT_FALSE(sub->links().spans_hosts());
    std::vector<float> sum = {1.0f};
    sub->all_reduce_sum(sum);
    EXPECT_EQ(sum[0], 2.0f);
    EXPECT_DOUBLE_EQ(sub->modelled_delay_seconds(), 0.0);  // one host: nothing held
  } else {
    EXPECT_EQ(a, nullptr);
  }
  if (rank == 1 || rank == 2) {
    auto* sub = dynamic_cast<DelayedCommunicator*>(pair.get());
    ASSERT_NE(sub, nullptr);
    EXPECT_TRUE(sub->links().remote(0, 1));
    std::vector<float> sum = {static_cast<float>(rank)};
    sub->all_reduce_sum(sum);
    EXPECT_EQ(sum[0], 3.0f);
    EXPECT_DOUBLE_EQ(sub->modelled_delay_seconds(), kDelay);
  } else {
    EXPECT_EQ(pair, nullptr);
  }
}

TEST(DelayedCommunicator, TheWorldIsWrappedOnlyWhenTheVariableIsSet) {
  const int everyone[] = {0, 1, 2, 3};
  std::unique_ptr<Communicator> plain = with_test_link_delay(mpi_world().split(everyone));
  EXPECT_EQ(dynamic_cast<DelayedCommunicator*>(plain.get()), nullptr);

  ASSERT_EQ(setenv(kLinkDelayVariable, "0.1", 1), 0);  // every rank alike
  std::unique_ptr<Communicator> delayed = with_test_link_delay(mpi_world().split(everyone));
  auto* wrapped = dynamic_cast<DelayedCommunicator*>(delayed.get());
  ASSERT_NE(wrapped, nullptr);
  // Every rank of this test runs on this machine's one host.
  EXPECT_FALSE(wrapped->links().spans_hosts());
  unsetenv(kLinkDelayVariable);
}

TEST(DelayedCommunicator, RanksThatDisagreeAllFailAlike) {
  // Rank 3 did not get the variable (mpirun without -x): every rank sees
  // every rank's value and throws the same error; none waits for another.
  if (mpi_world().rank() != 3) {
    ASSERT_EQ(setenv(kLinkDelayVariable, "1", 1), 0);
  }
  const int everyone[] = {0, 1, 2, 3};
  try {
    with_test_link_delay(mpi_world().split(everyone));
    ADD_FAILURE() << "ranks that disagree were accepted";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("rank 3 on"));
  }
  unsetenv(kLinkDelayVariable);
}

}  // namespace
}  // namespace tandem
