// ClusterLayout: which role this rank of an MPI job plays, from the
// config's placement (DESIGN.md, "Roles"). Every rank reads the same YAML
// and computes the same layout, so no rank has to be told who is who.
#pragma once

#include <string>

#include "coordinator/config/deployment_config.h"

namespace tandem {

enum class Role { coordinator, draft, target_shard };

struct ClusterLayout {
  PlacementConfig placement;
  int rank = 0;        // this process in the job
  int world_size = 1;
  Role role = Role::coordinator;
  int tp_rank = 0;     // position in the target's TP group (target shards only)

  // "rank 2 (target shard 1 of 2)": for logs and for errors naming a rank.
  std::string describe(int which) const;
  std::string describe_self() const { return describe(rank); }
};

// Checks the job against the placement (the number of processes must be
// exactly the ranks it names) and finds this rank's role. The error names
// the config's placement section and what to run instead.
ClusterLayout make_cluster_layout(const PlacementConfig& placement, int rank, int world_size);

}  // namespace tandem
