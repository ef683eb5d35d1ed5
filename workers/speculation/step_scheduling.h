// The engine's scheduling rules as pure functions, so they can be tested
// table-driven apart from any model: how a step's token budget is split
// into verification blocks and prefill chunks, and how much room admission
// asks of the KV cache.
#pragma once

#include <span>
#include <vector>

namespace tandem {

// One running session as the step planner sees it (admission order).
struct ChunkRequest {
  int uncached = 1;  // committed tokens the target cache lacks (>= 1)
  int gamma = 0;     // drafts it would verify once its final chunk fits
};

// What the session feeds this step.
struct ChunkPlan {
  int fed = 0;             // committed tokens fed (a prefill chunk or the catch-up token)
  bool verifies = false;   // final chunk: drafts γ, feeds them too, logits for γ+1 rows
  int tokens(const ChunkRequest& r) const { return fed + (verifies ? r.gamma : 0); }
};

// Splits one target pass among the sessions (given oldest first):
//   1. Decoding sessions (uncached == 1) always get their verification block,
//      1 + γ tokens; γ comes from the policy alone, never from the load, so a
//      seeded request replays the same tokens whatever else is running.
//   2. Every prefilling session (uncached >= 2) is promised one token, so
//      nothing starves; what the budget has left after 1. and those promises
//      goes to them oldest first.
//   3. A prefilling session verifies (feeds all it lacks plus γ drafts) only
//      when that fits its share; otherwise it feeds a chunk that stops at
//      least one token short of its committed end (no logits, no drafts), so
//      its first block starts where an unchunked run's would, with the same γ.
// The total stays <= budget whenever the decoding blocks plus one token per
// prefilling session fit in it.
std::vector<ChunkPlan> plan_chunks(std::span<const ChunkRequest> sessions, int budget);

// Free KV blocks admission requires: the first chunk's blocks plus one block
// of headroom per running session (their next blocks), so that admitting a
// session does not immediately force a preemption.
int blocks_to_admit(int first_chunk_tokens, int block_size, int running);

}  // namespace tandem
