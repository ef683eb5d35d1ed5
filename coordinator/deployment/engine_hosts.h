// The two EngineHosts (coordinator/server/engine_host.h) a deployment can
// have: every model in this process, or the coordinator of an MPI job whose
// placement puts models on other ranks.
#pragma once

#include <memory>

#include "cluster/links/peer_channel.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/server/engine_host.h"

namespace tandem {

// Every model in this process.
std::unique_ptr<EngineHost> local_engine_host(const DeploymentConfig& config);

// The coordinator rank of a job: the models the placement puts elsewhere
// are used through channel (which must outlive the host); load() waits for
// every other rank's WorkerReady, stop() sends them Shutdown, drain() takes
// the draft rank's last q rows.
std::unique_ptr<EngineHost> cluster_engine_host(const DeploymentConfig& config,
                                                PeerChannel& channel);

}  // namespace tandem
