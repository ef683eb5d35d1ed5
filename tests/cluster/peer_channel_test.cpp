// Tests of PeerChannel's errors for a lost rank (cluster/links/peer_channel):
// the rank, its role and host, the step timeout, and for a reply that waits
// on other ranks (target rank 0's result), those ranks too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace tandem
