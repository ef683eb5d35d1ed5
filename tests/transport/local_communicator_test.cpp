// LocalCommunicator: a world of one rank. Collectives copy, messages to
// oneself queue per tag, receive never waits, split({0}) stays local.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "common/error.h"
#include "transport/local_communicator.h"
#include "transport/mpi_runtime.h"
#include "transport/world_communicator.h"

namespace tandem {
namespace {

Bytes bytes_of(std::initializer_list<int> values) {
  Bytes bytes;
  for (int v : values) bytes.push_back(static_cast<std::byte>(v));
  return bytes;
}

TEST(LocalCommunicator, RankZeroOfOne) {
  LocalCommunicator world;
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.size(), 1);
}

TEST(LocalCommunicator, CollectivesAreCopies) {
  LocalCommunicator world;
  std::vector<float> data = {1.5f, -2.0f};
  world.all_reduce_sum(data);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));

  std::vector<float> all(2, 0.0f);
  world.all_gather(data, all);
  EXPECT_EQ(all, data);
  std::vector<float> gathered(2, 0.0f);
  world.gather(data, gathered, 0);
  EXPECT_EQ(gathered, data);

  Bytes bytes = bytes_of({1, 2, 3});
  world.broadcast(bytes, 0);
  EXPECT_EQ(bytes, bytes_of({1, 2, 3}));
}

TEST(LocalCommunicator, WrongShapesAndRanksAreErrors) {
  LocalCommunicator world;
  std::vector<float> mine(2), all(3);
  EXPECT_THROW(world.all_gather(mine, all), Error);
  EXPECT_THROW(world.gather(mine, std::span<float>(mine), 1), Error);
  EXPECT_THROW(world.send(bytes_of({1}), 1, 5), Error);
  EXPECT_THROW(world.receive(1, 5, 0.0), Error);
}

TEST(LocalCommunicator, MessagesToSelfQueuePerTagInOrder) {
  LocalCommunicator world;
  world.send(bytes_of({1}), 0, 10);
  world.send(bytes_of({2}), 0, 20);
  world.send(bytes_of({3}), 0, 10);
  world.send(Bytes{}, 0, 10);  // an empty message is still a message
  EXPECT_EQ(world.receive(0, 20, 0.0), bytes_of({2}));
  EXPECT_EQ(world.receive(0, 10, 0.0), bytes_of({1}));
  EXPECT_EQ(world.receive(0, 10, 0.0), bytes_of({3}));
  EXPECT_EQ(world.receive(0, 10, 0.0), Bytes{});
  EXPECT_EQ(world.receive(0, 10, 0.0), std::nullopt);
  EXPECT_EQ(world.receive(0, 20, 0.0), std::nullopt);
}

TEST(LocalCommunicator, FloatsToSelfArriveInOrderAndAMissingRunIsAnError) {
  LocalCommunicator world;
  EXPECT_FALSE(world.floats_on_device());
  world.send_floats(std::vector<float>{1.5f, -2.0f}, 0);
  world.send_floats(std::vector<float>{}, 0);
  std::vector<float> two(2), none;
  world.receive_floats(two, 0);
  world.receive_floats(none, 0);
  EXPECT_EQ(two, (std::vector<float>{1.5f, -2.0f}));
  // Nothing more was sent, and with one rank nothing more can come.
  EXPECT_THROW(world.receive_floats(two, 0), Error);
}

TEST(LocalCommunicator, ReceiveWithNothingQueuedReturnsAtOnce) {
  LocalCommunicator world;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(world.receive(0, 1, 30.0), std::nullopt);
  EXPECT_EQ(world.receive(0, 1, -1.0), std::nullopt);  // "forever" would be a hang
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(LocalCommunicator, SplitGivesAnotherLocalCommunicator) {
  LocalCommunicator world;
  world.send(bytes_of({9}), 0, 1);
  const int self[] = {0};
  std::unique_ptr<Communicator> sub = world.split(self);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->receive(0, 1, 0.0), std::nullopt);  // its own queues
  EXPECT_EQ(world.split({}), nullptr);
  const int other[] = {1};
  EXPECT_THROW(world.split(other), Error);
}

TEST(LocalCommunicatorDeathTest, AbortJobExitsWithTheCode) {
  LocalCommunicator world;
  EXPECT_EXIT(world.abort_job(7), testing::ExitedWithCode(7), "");
}

TEST(WorldCommunicator, WithoutALauncherTheWorldIsLocal) {
  if (MpiRuntime::launched_by_mpi()) GTEST_SKIP() << "running under an MPI launcher";
  std::optional<MpiRuntime> runtime;
  std::unique_ptr<Communicator> world = make_world_communicator(runtime);
  EXPECT_FALSE(runtime.has_value());
  ASSERT_NE(dynamic_cast<LocalCommunicator*>(world.get()), nullptr);
}

}  // namespace
}  // namespace tandem
