// A worker rank's life: load its model (or its shard) with the loader the
// composition root gives it, report WorkerReady to the coordinator, then
// serve commands (draft_rank.h, target_rank.h) until Shutdown.
//
// The loader keeps the cluster wing out of how models and configs are read:
// it gets the rank's layout and returns what it loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "cluster/links/peer_channel.h"
#include "kernels/backend.h"
#include "transport/communicator.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem {

// One worker's model. The backend is declared first, so that it outlives
// the model and the cache that use it.
struct WorkerModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<PagedKvCache> cache;
  int64_t bytes_read = 0;  // checkpoint bytes this rank read (its slices only)
};

// Loads the model of this rank's role: the draft model on the draft rank,
// shard layout.tp_rank of the target on a target shard (tp_group: the
// shard's group, for the model's collectives; nullptr on the draft rank).
using WorkerLoader =
    std::function<WorkerModel(const ClusterLayout& layout, Communicator* tp_group)>;

// Returns the exit code the coordinator's Shutdown asked for.
int serve_worker(PeerChannel& channel, Communicator* tp_group, const WorkerLoader& load);

}  // namespace tandem
