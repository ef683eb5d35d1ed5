#include "cluster/layout/cluster_layout.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace tandem {

int RankPlacement::world_size() const {
  int highest = std::max(coordinator_rank, draft_rank);
  for (int rank : target_ranks) highest = std::max(highest, rank);
  return highest + 1;
}

std::string ClusterLayout::describe(int which) const {
  const std::vector<int>& targets = placement.target_ranks;
  const auto shard = std::find(targets.begin(), targets.end(), which);
  std::string roles;
  const auto add = [&](const std::string& name) { roles += (roles.empty() ? "" : ", ") + name; };
  if (which == placement.coordinator_rank) add("coordinator");
  if (which == placement.draft_rank && placement.draft_is_remote()) add("draft");
  if (shard != targets.end() && placement.target_is_remote()) {
    add("target shard " + std::to_string(shard - targets.begin()) + " of " +
        std::to_string(targets.size()));
  }
  if (roles.empty()) add("no role");
  if (which >= 0 && static_cast<size_t>(which) < hosts.size())
    add("on host " + hosts[static_cast<size_t>(which)]);
  return "rank " + std::to_string(which) + " (" + roles + ")";
}

ClusterLayout make_cluster_layout(const RankPlacement& placement, int rank, int world_size,
                                  std::vector<std::string> hosts) {
  require(world_size == placement.world_size(), ErrorKind::invalid_argument, [&] {
    return placement.source + ": names ranks 0.." + std::to_string(placement.world_size() - 1) +
           " (" + std::to_string(placement.world_size()) + " processes), but this job has " +
           std::to_string(world_size) + ": start it with `mpirun -np " +
           std::to_string(placement.world_size()) + " tandem serve ...` or change " +
           "placement.target_ranks / placement.draft_rank";
  });
  ClusterLayout layout;
  layout.placement = placement;
  layout.rank = rank;
  layout.world_size = world_size;
  layout.hosts = std::move(hosts);
  const std::vector<int>& targets = placement.target_ranks;
  const auto shard = std::find(targets.begin(), targets.end(), rank);
  if (rank == placement.coordinator_rank) {
    layout.role = Role::coordinator;
  } else if (shard != targets.end()) {
    layout.role = Role::target_shard;
    layout.tp_rank = static_cast<int>(shard - targets.begin());
  } else {
    layout.role = Role::draft;  // placement checked that every rank has a role
  }
  return layout;
}

}  // namespace tandem
