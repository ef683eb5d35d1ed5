// ClusterLayout: which role this rank of an MPI job plays, from the job's
// placement (docs/design.md, "Roles"). Every rank reads the same config and
// computes the same layout, so no rank has to be told who is who.
//
// RankPlacement is what the cluster wing needs of a deployment's placement:
// plain numbers, nothing about how the config is read. The config's
// PlacementConfig extends it (coordinator/config/deployment_config.h).
#pragma once

#include <string>
#include <vector>

#include "kernels/backend.h"

namespace tandem {

struct RankPlacement {
  BackendKind backend = BackendKind::cpu;  // cuda: every role on a GPU
  int coordinator_rank = 0;                // HTTP server, scheduler, engine
  int draft_rank = 0;                      // the draft model (may be the coordinator's own)
  int draft_device = 0;                    // its GPU on its host (cuda)
  std::vector<int> target_ranks = {0};     // the target's tensor-parallel group, in TP order
  std::vector<int> target_devices;         // their GPUs (cuda); empty = all 0
  double step_timeout_seconds = 30;        // a rank silent this long in a step is lost
  std::string source;  // where the placement was written ("FILE:LINE"), for errors

  int tensor_parallel() const { return static_cast<int>(target_ranks.size()); }
  // Processes the job must have: one past the highest rank named.
  int world_size() const;
  bool draft_is_remote() const { return draft_rank != coordinator_rank; }
  bool target_is_remote() const {
    return target_ranks.size() != 1 || target_ranks[0] != coordinator_rank;
  }
  // The GPU of target shard tp_rank on its host (cuda).
  int target_device(int tp_rank) const {
    return target_devices.empty() ? 0 : target_devices[static_cast<size_t>(tp_rank)];
  }
};

enum class Role { coordinator, draft, target_shard };

struct ClusterLayout {
  RankPlacement placement;
  int rank = 0;        // this process in the job
  int world_size = 1;
  Role role = Role::coordinator;
  int tp_rank = 0;     // position in the target's TP group (target shards only)
  // The host each rank runs on, by rank (gather_host_names, layout/host_names.h);
  // empty where nobody gathered them (tests): then describe() names no host.
  std::vector<std::string> hosts;

  // "rank 2 (target shard 1 of 2, on host node-3)": for logs and for errors
  // naming a rank (a lost rank's host is where to look first).
  std::string describe(int which) const;
  std::string describe_self() const { return describe(rank); }
};

// Checks the job against the placement (the number of processes must be
// exactly the ranks it names) and finds this rank's role. The error names
// the placement's source and what to run instead.
// `hosts`: every rank's host, by rank, or empty.
ClusterLayout make_cluster_layout(const RankPlacement& placement, int rank, int world_size,
                                  std::vector<std::string> hosts = {});

}  // namespace tandem
