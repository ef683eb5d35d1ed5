// The cluster wing's view of the config's placement section: the ranks and
// devices as plain numbers (cluster/layout/cluster_layout.h), so that the
// cluster wing never reads the config itself.
#pragma once

#include "cluster/layout/cluster_layout.h"
#include "coordinator/config/deployment_config.h"

namespace tandem {

RankPlacement rank_placement(const PlacementConfig& placement);

}  // namespace tandem
