// The target's tensor-parallel group: a communicator over the placement's
// target ranks, for the shards' collectives.
#pragma once

#include <memory>

#include "cluster/layout/cluster_layout.h"
#include "transport/communicator.h"

namespace tandem {

// Collective over the job's world communicator: every rank calls it, at the
// same point among its other splits. The target shards get their group
// (NCCL over it where the shards hold GPUs and there is more than one);
// every other rank gets nullptr.
std::unique_ptr<Communicator> connect_tp_group(Communicator& world, const ClusterLayout& layout);

}  // namespace tandem
