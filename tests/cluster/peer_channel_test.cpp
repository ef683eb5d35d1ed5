// Tests of PeerChannel's errors for a lost rank (cluster/links/peer_channel):
// the rank, its role and host, the step timeout, and for a reply that waits
// on other ranks (target rank 0's result), those ranks too; and overdue(),
// which another thread reads when the waiting thread is held past its
// step timeout (as MPI can hold it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "cluster/layout/cluster_layout.h"
#include "cluster/links/peer_channel.h"
#include "common/error.h"
#include "tests/support/thread_communicator.h"

namespace tandem {
namespace {

using test_support::run_ranks;
using testing::EndsWith;
using testing::HasSubstr;

// The coordinator (rank 0) awaits what rank 2 never sends; the other ranks
// send nothing. Returns the error's message.
std::string lost_message(const std::vector<int>& peers) {
  RankPlacement placement;
  placement.draft_rank = 1;
  placement.target_ranks = {2, 3};
  placement.step_timeout_seconds = 0.05;
  std::string message;
  run_ranks(4, [&](Communicator& world) {
    if (world.rank() != 0) return;
    const ClusterLayout layout =
        make_cluster_layout(placement, 0, 4, {"node-a", "node-b", "node-c", "node-d"});
    PeerChannel channel(world, layout);
    try {
      channel.await_after_peers(2, Tag::target_result, "return the result of target step 9",
                                peers);
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::unavailable);
      message = error.what();
    }
  });
  return message;
}

TEST(PeerChannel, ALostRankIsNamedWithItsRoleAndHost) {
  EXPECT_EQ(lost_message({}),
            "rank 2 (target shard 0 of 2, on host node-c) did not return the result of "
            "target step 9 within 0.05 s (placement.step_timeout_seconds): it is lost");
}

TEST(PeerChannel, AReplyThatWaitsOnPeersNamesThemToo) {
  const std::string message = lost_message({2, 3});
  EXPECT_THAT(message, HasSubstr("rank 2 (target shard 0 of 2, on host node-c) did not return"));
  EXPECT_THAT(message, EndsWith(": it is lost, or one it waits for is: "
                                "rank 3 (target shard 1 of 2, on host node-d)"));
}

// A world whose receive() holds the caller for `hold`, whatever its
// timeout, then returns nothing: a thread held inside MPI.
class HoldingWorld final : public Communicator {
 public:
  explicit HoldingWorld(std::chrono::milliseconds hold) : hold_(hold) {}
  int rank() const override { return 0; }
  int size() const override { return 4; }
  void all_reduce_sum(std::span<float>) override { unused(); }
  void all_gather(std::span<const float>, std::span<float>) override { unused(); }
  void gather(std::span<const float>, std::span<float>, int) override { unused(); }
  void broadcast(Bytes&, int) override { unused(); }
  void send(std::span<const std::byte>, int, int) override { unused(); }
  std::optional<Bytes> receive(int, int, double) override {
    std::this_thread::sleep_for(hold_);
    return std::nullopt;
  }
  std::unique_ptr<Communicator> split(std::span<const int>) override { unused(); }
  [[noreturn]] void abort_job(int) override { unused(); }

 private:
  [[noreturn]] static void unused() { throw Error(ErrorKind::internal, "not used here"); }
  std::chrono::milliseconds hold_;
};

TEST(PeerChannel, AWaitHeldPastItsTimeoutIsOverdueWithTheErrorItWouldThrow) {
  RankPlacement placement;
  placement.draft_rank = 1;
  placement.target_ranks = {2, 3};
  placement.step_timeout_seconds = 0.1;
  const ClusterLayout layout =
      make_cluster_layout(placement, 0, 4, {"node-a", "node-b", "node-c", "node-d"});
  HoldingWorld world(std::chrono::milliseconds(3000));
  PeerChannel channel(world, layout);
  EXPECT_EQ(channel.overdue(0.1), "");  // no wait under way

  std::string thrown;
  std::thread waiter([&] {
    try {
      channel.await_after_peers(2, Tag::target_result, "return the result of target step 9",
                                {2, 3});
    } catch (const Error& error) {
      thrown = error.what();
    }
  });
  // Within the timeout and its grace (0.1 + 1 s), nothing is overdue...
  EXPECT_EQ(channel.overdue(1.0), "");
  // ...past them, with the wait still held, it is, naming what the wait
  // would have named.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const std::string overdue = channel.overdue(0.1);
  EXPECT_EQ(channel.overdue(5.0), "");  // a longer grace has not passed yet
  waiter.join();
  EXPECT_EQ(overdue, thrown);
  EXPECT_THAT(overdue, HasSubstr("rank 2 (target shard 0 of 2, on host node-c) did not return "
                                 "the result of target step 9 within 0.1 s"));
  EXPECT_EQ(channel.overdue(0.0), "");  // the wait has ended
}

}  // namespace
}  // namespace tandem
