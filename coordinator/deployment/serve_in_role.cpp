#include "coordinator/deployment/serve_in_role.h"

#include <signal.h>

#include <iostream>
#include <optional>
#include <string>

#include "cluster/layout/cluster_layout.h"
#include "cluster/layout/host_names.h"
#include "cluster/links/peer_channel.h"
#include "cluster/links/q_rows_link.h"
#include "cluster/links/tp_group.h"
#include "cluster/ranks/worker_rank.h"
#include "common/error.h"
#include "common/log_line.h"
#include "coordinator/deployment/engine_hosts.h"
#include "coordinator/deployment/prefix_cache_apply.h"
#include "coordinator/models/load_model.h"
#include "coordinator/server/server_app.h"
#include "kernels/cpu/thread_pool.h"
#include "transport/world_communicator.h"

namespace tandem {
namespace {

// A worker rank: load its model (or its shard), report, serve until told to stop.
int run_worker(const DeploymentConfig& config, PeerChannel& channel, Communicator* tp_group) {
  // SIGTERM and SIGINT reach every rank when mpirun forwards them or
  // `scancel --signal=TERM` signals every task; the coordinator decides
  // when the job ends and says so with Shutdown. Ignored for the whole
  // process: a mask would cover only threads started after it, and
  // MPI_Init has started its own, which would take the signal and die of it.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  cpu::configure_threads(config.placement.cpu_threads, config.placement.cpu_pinning);
  log_line(std::cerr, "worker rank CPU kernels: ", cpu::describe_threads(),
           " (placement.cpu_threads, placement.cpu_pinning)");
  const WorkerLoader load = [&config](const ClusterLayout& layout, Communicator* group) {
    return load_worker_model(config, layout, group);
  };
  return serve_worker(channel, tp_group, load);
}

}  // namespace

WorkerModel load_worker_model(const DeploymentConfig& config, const ClusterLayout& layout,
                              Communicator* tp_group) {
  const bool draft = layout.role == Role::draft;
  const PlacementConfig& placement = config.placement;
  WorkerModel loaded;
  WeightDtypeChoice weights;
  loaded.backend = make_placement_backend(
      placement, draft ? placement.draft_device : placement.target_device(layout.tp_rank),
      checkpoint_dirs({draft ? &*config.draft : &config.target}), &weights);
  log_line(std::cerr, "worker rank weights: ", describe(weights));
  ModelSpec spec = draft ? model_spec(*config.draft, config.scheduler.draft_kv_blocks,
                                      config.scheduler.block_size)
                         : model_spec(config.target, config.scheduler.kv_blocks,
                                      config.scheduler.block_size);
  spec.tokenizer_dir.reset();  // the coordinator tokenizes
  if (!draft) spec.shard = TensorShard{layout.tp_rank, placement.tensor_parallel(), tp_group};
  LoadedModel model = load_model(spec, *loaded.backend);
  loaded.model = std::move(model.model);
  loaded.cache = std::move(model.cache);
  if (draft) apply(config.scheduler.prefix_cache, *loaded.cache);
  loaded.bytes_read = model.bytes_read;
  return loaded;
}

int serve_in_role(DeploymentConfig config) {
  std::optional<MpiRuntime> mpi;  // outlives every communicator below
  std::unique_ptr<Communicator> world = make_world_communicator(mpi);
  if (world->size() == 1 && !config.placement.distributed()) {
    std::unique_ptr<EngineHost> host = local_engine_host(config);
    return run_until_signalled(std::move(config), std::move(host));
  }

  // Every rank learns every rank's host now, while all are there to say it:
  // a rank lost later is named with its host (ClusterLayout::describe).
  const ClusterLayout layout = make_cluster_layout(config.placement, world->rank(), world->size(),
                                                   gather_host_names(*world));
  // Collective over the whole job: every rank calls it, shards get their group.
  std::unique_ptr<Communicator> tp_group = connect_tp_group(*world, layout);
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
    std::unique_ptr<EngineHost> host = cluster_engine_host(config, channel);
    const int code = run_until_signalled(std::move(config), std::move(host));
    if (code == kLostRankExit) world->abort_job(code);  // the lost rank cannot be waited for
    return code;
  } catch (const std::exception& error) {
    log_line(std::cerr, layout.describe_self() + ": " + error.what() + "; ending the job");
    world->abort_job(1);
  }
  return 1;  // not reached: abort_job ends every process of the job
}

}  // namespace tandem
