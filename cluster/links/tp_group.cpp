#include "cluster/links/tp_group.h"

#include "common/error.h"
#ifdef TANDEM_HAVE_NCCL
#include "transport/nccl_communicator.h"
#endif

namespace tandem {
namespace {

// A GPU shard's collectives run on device buffers: NCCL over the group's
// MPI communicator (collective over the group).
std::unique_ptr<Communicator> gpu_group(std::unique_ptr<Communicator> group, int device) {
#ifdef TANDEM_HAVE_NCCL
  return make_nccl_communicator(std::move(group), device);
#else
  (void)group;
  (void)device;
  throw Error(ErrorKind::unsupported,
              "placement.backend is cuda with a tensor-parallel target, but this build has no "
              "NCCL (nccl.h or libnccl were not found when it was built; see docs/gpu.md)");
#endif
}

}  // namespace

std::unique_ptr<Communicator> connect_tp_group(Communicator& world, const ClusterLayout& layout) {
  const RankPlacement& placement = layout.placement;
  std::unique_ptr<Communicator> group = world.split(placement.target_ranks);
  if (group && group->size() > 1 && placement.backend == BackendKind::cuda)
    group = gpu_group(std::move(group), placement.target_device(layout.tp_rank));
  return group;
}

}  // namespace tandem
