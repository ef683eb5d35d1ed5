// The draft rank's serving loop: it waits for the coordinator's next
// command and runs it until Shutdown, then returns the exit code the
// Shutdown asked for.
//
// DraftStep → catch the sessions' tokens up, propose γ each, DraftReply
// (tokens) to the coordinator, then the sampled sessions' q rows to target
// rank 0 over the q rows link.
// The drafter uses prefix caching iff `cache` has it on (the loader turned
// it on as the deployment says): each request under its cache_salt, and
// every DraftReply carries the cache's counters so far.
#pragma once

#include "cluster/links/peer_channel.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem {

int serve_draft_rank(PeerChannel& channel, LlamaModel& draft, PagedKvCache& cache);

}  // namespace tandem
