// The serving loops of the worker ranks: they wait for the coordinator's
// next command and run it until Shutdown. Both return the exit code the
// Shutdown asked for.
//
// draft rank:   DraftStep → catch the session's tokens up, propose γ each,
//               DraftReply (tokens) to the coordinator, then the sampled
//               sessions' q rows to target rank 0 over the q rows link;
// target shard: TargetStep → acknowledge, replay the coordinator's KV
//               bookkeeping on the local cache, run this shard's forward
//               (collectives with the other shards); target rank 0 also
//               verifies and returns TargetResult.
#pragma once

#include "cluster/peer_channel.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem {

int serve_draft_rank(PeerChannel& channel, LlamaModel& draft, PagedKvCache& cache);
int serve_target_rank(PeerChannel& channel, LlamaModel& shard, PagedKvCache& cache);

}  // namespace tandem
