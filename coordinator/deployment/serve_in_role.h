// serve_in_role: `tandem serve` for every process of a job.
//
// Started directly, the process is the whole server (world size 1, every
// role local). Under mpirun or srun every rank reads the same config,
// checks the job against its placement, and takes its role: the
// coordinator runs the HTTP server and the engine; the draft rank and the
// target shards load their models, report WorkerReady and serve commands
// until the coordinator's Shutdown. Returns the process's exit code; a
// rank that fails, or a coordinator that lost a rank, ends the whole job
// (MPI_Abort) with a message naming the rank, so nothing is left waiting.
//
// The composition root of a `tandem serve` process (README.md): the one
// place that joins the server (coordinator/server/) to the cluster wing
// (cluster/), which do not know each other.
#pragma once

#include "cluster/layout/cluster_layout.h"
#include "cluster/ranks/worker_rank.h"
#include "coordinator/config/deployment_config.h"

namespace tandem {

int serve_in_role(DeploymentConfig config);

// A worker rank's model as the config says: the draft (its KV cache with
// the deployment's prefix caching, scheduler.prefix_caching), or shard
// layout.tp_rank of the target (its cache a driven mirror of the
// coordinator's account: never prefix caching of its own). The
// WorkerLoader of serve_in_role's workers, and of tests' MPI jobs.
WorkerModel load_worker_model(const DeploymentConfig& config, const ClusterLayout& layout,
                              Communicator* tp_group);

}  // namespace tandem
