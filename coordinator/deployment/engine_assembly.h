// Which target executor and which drafters the engine runs with: models in
// this process, or proxies for models the placement puts on other ranks of
// an MPI job (cluster/proxies/). The one place that decides between them.
#pragma once

#include "cluster/links/peer_channel.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/server/engine_host.h"

namespace tandem {

// Loads what runs in this process and fills parts. cluster: the
// coordinator's channel to the other ranks (null in a single process, where
// every model is local).
void assemble_engine(const DeploymentConfig& config, PeerChannel* cluster, EngineParts& parts);

}  // namespace tandem
