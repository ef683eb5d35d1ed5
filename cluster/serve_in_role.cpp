#include "cluster/serve_in_role.h"

#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/log_line.h"
#include "cluster/cluster_layout.h"
#include "cluster/peer_channel.h"
#include "cluster/worker_loops.h"
#include "coordinator/models/load_model.h"
#include "coordinator/server/server_app.h"
#include "transport/world_communicator.h"
#ifdef TANDEM_HAVE_NCCL
#include "transport/nccl_communicator.h"
#endif

namespace tandem {
namespace {

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// A worker rank: load its model (or its shard), report, serve until told to stop.
int run_worker(const DeploymentConfig& config, PeerChannel& channel, Communicator* tp_group) {
  // SIGTERM and SIGINT reach every rank when mpirun forwards them; the
  // coordinator decides when the job ends and says so with Shutdown.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (config.placement.threads > 0) omp_set_num_threads(config.placement.threads);

  const ClusterLayout& layout = channel.layout();
  const auto start = std::chrono::steady_clock::now();
  const bool draft = layout.role == Role::draft;
  const PlacementConfig& placement = config.placement;
  std::unique_ptr<Backend> backend = make_placement_backend(
      placement, draft ? placement.draft_device : placement.target_device(layout.tp_rank));
  ModelSpec spec = draft ? model_spec(*config.draft, config.scheduler.draft_kv_blocks,
                                      config.scheduler.block_size)
                         : model_spec(config.target, config.scheduler.kv_blocks,
                                      config.scheduler.block_size);
  spec.tokenizer_dir.reset();  // the coordinator tokenizes
  if (!draft) spec.shard = TensorShard{layout.tp_rank, config.placement.tensor_parallel(), tp_group};
  LoadedModel loaded = load_model(spec, *backend);

  wire::WorkerReady ready;
  ready.rank = layout.rank;
  ready.bytes_read = loaded.bytes_read;
  ready.resident_bytes = resident_bytes();
  ready.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int coordinator = layout.placement.coordinator_rank;
  channel.send(wire::encode(ready), coordinator, wire::tag_of(wire::MessageType::worker_ready));
  return draft ? serve_draft_rank(channel, *loaded.model, *loaded.cache)
               : serve_target_rank(channel, *loaded.model, *loaded.cache);
}

// A GPU shard's collectives run on device buffers: NCCL over the group's
// MPI communicator (collective over the group).
std::unique_ptr<Communicator> gpu_group(std::unique_ptr<Communicator> group, int device) {
#ifdef TANDEM_HAVE_NCCL
  return make_nccl_communicator(std::move(group), device);
#else
  throw Error(ErrorKind::unsupported,
              "placement.backend is cuda with a tensor-parallel target, but this build has no "
              "NCCL (nccl.h or libnccl were not found when it was built; see docs/gpu.md)");
#endif
}

}  // namespace

int serve_in_role(DeploymentConfig config) {
  std::optional<MpiRuntime> mpi;  // outlives every communicator below
  std::unique_ptr<Communicator> world = make_world_communicator(mpi);
  if (world->size() == 1 && !config.placement.distributed())
    return run_until_signalled(std::move(config));

  const ClusterLayout layout =
      make_cluster_layout(config.placement, world->rank(), world->size());
  // Collective over the whole job: every rank calls it, shards get their group.
  std::unique_ptr<Communicator> tp_group = world->split(layout.placement.target_ranks);
  if (tp_group && tp_group->size() > 1 && layout.placement.backend == BackendKind::cuda)
    tp_group = gpu_group(std::move(tp_group), layout.placement.target_device(layout.tp_rank));
  // Also collective: the draft rank's q rows link (NCCL between the draft's
  // and target rank 0's GPUs where it can be).
  std::unique_ptr<QRowsLink> q_rows_link =
      QRowsLink::connect(*world, layout, config.draft.has_value());
  PeerChannel channel(*world, layout);
  channel.set_q_rows_link(q_rows_link.get());
  try {
    if (layout.role != Role::coordinator) {
      const int code = run_worker(config, channel, tp_group.get());
      log_line(std::cerr, layout.describe_self() + " stopped");
      return code;
    }
    log_line(std::cerr, layout.describe_self() + " of " + std::to_string(layout.world_size));
    const int code = run_until_signalled(std::move(config), &channel);
    if (code == kLostRankExit) world->abort_job(code);  // the lost rank cannot be waited for
    return code;
  } catch (const std::exception& error) {
    log_line(std::cerr, layout.describe_self() + ": " + error.what() + "; ending the job");
    world->abort_job(1);
  }
  return 1;  // not reached: abort_job ends every process of the job
}

}  // namespace tandem
