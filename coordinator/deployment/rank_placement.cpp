#include "coordinator/deployment/rank_placement.h"

namespace tandem {

RankPlacement rank_placement(const PlacementConfig& placement) {
  RankPlacement ranks;
  ranks.backend = placement.backend;
  ranks.coordinator_rank = placement.coordinator_rank;
  ranks.draft_rank = placement.draft_rank;
  ranks.draft_device = placement.draft_device;
  ranks.target_ranks = placement.target_ranks;
  ranks.target_devices = placement.target_devices;
  ranks.step_timeout_seconds = placement.step_timeout_seconds;
  ranks.source = placement.source;
  return ranks;
}

}  // namespace tandem
