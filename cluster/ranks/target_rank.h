// A target shard's serving loop: it waits for the coordinator's next
// command and runs it until Shutdown, then returns the exit code the
// Shutdown asked for.
//
// TargetStep → acknowledge, replay the coordinator's KV bookkeeping on the
// local cache, run this shard's forward (collectives with the other
// shards); target rank 0 also verifies and returns TargetResult, taking the
// draft rank's q rows as they come.
#pragma once

#include "cluster/links/peer_channel.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem {

int serve_target_rank(PeerChannel& channel, LlamaModel& shard, PagedKvCache& cache);

}  // namespace tandem
