// Tests of placement: the ranks and roles of an MPI job in the YAML
// (coordinator/config) and the layout each rank derives from it
// (cluster/layout/cluster_layout, from the RankPlacement a PlacementConfig
// is). Every mistake names the key and line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "tests/coordinator/deployment_error.h"
#include "cluster/layout/cluster_layout.h"
#include "coordinator/config/deployment_config.h"

namespace tandem {
namespace {

using test_support::error_of;

using testing::HasSubstr;
using testing::StartsWith;

const std::filesystem::path kSourceDir = TANDEM_SOURCE_DIR;

// Lines 1-6: a target and a draft; placement starts on line 7.
const std::string kModels =
    "models:\n  target:\n    path: t\n  draft:\n    path: d\nplacement:\n";


TEST(Placement, DefaultsPutEveryRoleInOneProcess) {
  const PlacementConfig placement = parse_deployment(kModels, "deploy.yaml").placement;
  EXPECT_EQ(placement.coordinator_rank, 0);
  EXPECT_EQ(placement.draft_rank, 0);
  EXPECT_EQ(placement.target_ranks, std::vector<int>{0});
  EXPECT_EQ(placement.world_size(), 1);
  EXPECT_FALSE(placement.distributed());
  EXPECT_FALSE(placement.draft_is_remote());
  EXPECT_FALSE(placement.target_is_remote());
}

TEST(Placement, ClusterCpuYamlIsFourRanksWithATensorParallelTarget) {
  const DeploymentConfig config = load_deployment(kSourceDir / "configs/cluster-cpu.yaml");
  const PlacementConfig& placement = config.placement;
  EXPECT_EQ(placement.world_size(), 4);
  EXPECT_EQ(placement.tensor_parallel(), 2);
  EXPECT_EQ(placement.draft_rank, 1);
  EXPECT_TRUE(placement.draft_is_remote());
  EXPECT_TRUE(placement.target_is_remote());
  EXPECT_EQ(placement.target_devices, (std::vector<int>{0, 0}));
  EXPECT_THAT(describe(config), HasSubstr("4 ranks: coordinator 0, draft 1, target TP 2 on [2, 3]"));

  // Every rank finds its own role.
  const std::vector<Role> roles = {Role::coordinator, Role::draft, Role::target_shard,
                                   Role::target_shard};
  for (int rank = 0; rank < 4; ++rank) {
    const ClusterLayout layout = make_cluster_layout(placement, rank, 4);
    EXPECT_EQ(layout.role, roles[static_cast<size_t>(rank)]) << rank;
  }
  EXPECT_EQ(make_cluster_layout(placement, 3, 4).tp_rank, 1);
  const ClusterLayout layout = make_cluster_layout(placement, 0, 4);
  EXPECT_EQ(layout.describe(0), "rank 0 (coordinator)");
  EXPECT_EQ(layout.describe(1), "rank 1 (draft)");
  EXPECT_EQ(layout.describe(3), "rank 3 (target shard 1 of 2)");
}

TEST(Placement, TheJobMustHaveExactlyTheRanksNamed) {
  const DeploymentConfig config = load_deployment(kSourceDir / "configs/cluster-cpu.yaml");
  try {
    make_cluster_layout(config.placement, 0, 2);
    FAIL() << "a 2-process job was accepted for a 4-rank placement";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, StartsWith((kSourceDir / "configs/cluster-cpu.yaml").string() + ":"));
    EXPECT_THAT(message, HasSubstr("names ranks 0..3 (4 processes), but this job has 2"));
    EXPECT_THAT(message, HasSubstr("mpirun -np 4"));
  }
}

TEST(Placement, MistakesNameTheKeyAndLine) {
  struct Case {
    std::string yaml;
    std::string expected;  // the message's start
  };
  const std::vector<Case> cases = {
      {"  target_ranks: []\n", "deploy.yaml:7: placement.target_ranks: must name at least one rank"},
      {"  target_ranks: [1, 2, 1]\n  draft_rank: 3\n",
       "deploy.yaml:7: placement.target_ranks: rank 1 appears twice"},
      {"  target_ranks: 2\n", "deploy.yaml:7: placement.target_ranks: expected a list of integers"},
      {"  target_ranks: [1, x]\n",
       "deploy.yaml:7: placement.target_ranks: target_ranks[1]: expected an integer"},
      {"  target_ranks: [1, -2]\n",
       "deploy.yaml:7: placement.target_ranks: target_ranks[1]: must be an integer in [0, 65535]"},
      {"  target_ranks: [0, 1]\n",
       "deploy.yaml:7: placement.target_ranks: includes the coordinator's rank 0"},
      {"  target_ranks: [1, 2]\n  draft_rank: 2\n",
       "deploy.yaml:8: placement.draft_rank: rank 2 is also a target rank"},
      {"  target_ranks: [1, 2]\n  target_devices: [0]\n",
       "deploy.yaml:8: placement.target_devices: needs one device per target rank (2), got 1"},
      {"  target_ranks: [2, 3]\n", "deploy.yaml:7: placement.target_ranks: rank 1 has no role"},
      {"  step_timeout_seconds: 0\n", "deploy.yaml:7: placement.step_timeout_seconds: must be"},
  };
  for (const Case& c : cases)
    EXPECT_THAT(error_of(kModels + c.yaml), StartsWith(c.expected)) << c.yaml;
  // A draft rank needs a draft model.
  EXPECT_THAT(error_of("models:\n  target:\n    path: t\nplacement:\n  draft_rank: 1\n"
                       "  target_ranks: [2]\n"),
              StartsWith("deploy.yaml:5: placement.draft_rank: puts the draft model on rank 1, "
                         "but models.draft is not configured"));
}

}  // namespace
}  // namespace tandem
