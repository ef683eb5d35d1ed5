// Tests of cluster/layout/host_names and of how a layout names a rank's
// host: every rank learns every rank's host (here ranks are threads, each
// given a host name of its own), and describe() says it after the role.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "cluster/layout/cluster_layout.h"
#include "cluster/layout/host_names.h"
#include "tests/support/thread_communicator.h"

namespace tandem {
namespace {

using test_support::run_ranks;

RankPlacement four_rank_placement() {
  RankPlacement placement;
  placement.coordinator_rank = 0;
  placement.draft_rank = 1;
  placement.target_ranks = {2, 3};
  return placement;
}

TEST(HostNames, EveryRankGetsEveryRanksNameInRankOrder) {
  const std::vector<std::string> names = {"node-a", "node-b.example", "", "a-much-longer-name-h4"};
  std::mutex mutex;
  std::vector<std::vector<std::string>> seen(names.size());
  run_ranks(4, [&](Communicator& world) {
    std::vector<std::string> all =
        all_gather_strings(world, names[static_cast<size_t>(world.rank())]);
    std::lock_guard lock(mutex);
    seen[static_cast<size_t>(world.rank())] = std::move(all);
  });
  for (const std::vector<std::string>& all : seen) EXPECT_EQ(all, names);
}

TEST(HostNames, ThisHostNameIsTheKernels) {
  const std::string name = this_host_name();
  EXPECT_FALSE(name.empty());
  EXPECT_EQ(name.find("unknown"), std::string::npos) << name;
}

TEST(HostNames, DescribeNamesTheRanksRoleAndHost) {
  const ClusterLayout layout =
      make_cluster_layout(four_rank_placement(), 0, 4, {"h1", "h2", "h3", "h4"});
  EXPECT_EQ(layout.describe(0), "rank 0 (coordinator, on host h1)");
  EXPECT_EQ(layout.describe(1), "rank 1 (draft, on host h2)");
  EXPECT_EQ(layout.describe(3), "rank 3 (target shard 1 of 2, on host h4)");
  // A rank past the job's (never named by the code) has no host to name.
  EXPECT_EQ(layout.describe(7), "rank 7 (no role)");
}

TEST(HostNames, WithoutHostsDescribeNamesTheRoleAlone) {
  const ClusterLayout layout = make_cluster_layout(four_rank_placement(), 3, 4);
  EXPECT_EQ(layout.describe_self(), "rank 3 (target shard 1 of 2)");
}

}  // namespace
}  // namespace tandem
