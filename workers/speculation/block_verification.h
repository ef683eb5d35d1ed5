// verify_blocks: step 4 of the engine (accept) for one target pass.
//
// Given the pass's logits (rows in step order: each sequence's last
// logit_count tokens, a block's γ + 1 rows last, after any rows that score
// its prompt), verifies every sequence that asks for it: greedy
// sessions compare argmaxes (the fast path that never builds probability
// rows), sampled ones standardize p_1..p_{γ+1} and run Algorithm 1 against
// q rows that come from the drafter in this process, over the q rows link,
// or are one-hot.
// Runs wherever the logits are: in the engine's process, or on target
// rank 0 of a tensor-parallel group.
#pragma once

#include <functional>
#include <vector>

#include "kernels/backend.h"
#include "workers/speculation/logit_processing.h"
#include "workers/speculation/target_step.h"
#include "workers/speculation/q_rows_inbox.h"

namespace tandem {

// Backend memory verification reuses from step to step, grown as needed:
// the standardized p rows, and q rows the ops cannot read where they are
// (on another GPU: a draft GPU of its own in this process), copied device
// to device.
struct VerifyScratch {
  Buffer probs;
  Buffer q;
  ProcessingScratch processing;  // the rows of sessions with logit processing
};

// outcomes: one per sequence with verify set, in step order. A block whose
// sampling parameters the ops refuse, or whose logits rows hold a NaN or an
// infinity, gets an outcome carrying that fault (session_fault.h) and takes
// no part in the ops, so the other blocks' outcomes are what they would be
// without it. A block whose session asks for logit processing verifies
// from its processed rows (logit_processing.h), greedy ones included.
// Blocks whose session asks for logprobs get them in their outcome
// (logprob_rows.h), scored from those same rows. Rows with
// q_source local are local_q[i] (one per sequence, or empty when none is
// local); those with q_source draft_rank come from draft_rank_rows. A block
// whose rows are missing (no inbox, or not in its QRows) is an
// Error(internal) naming its session.
void verify_blocks(Backend& backend, int V, const float* logits, const TargetStep& step,
                   std::span<const DeviceRows> local_q, QRowsInbox* draft_rank_rows,
                   VerifyScratch& scratch, std::vector<TargetResult::Outcome>& outcomes);

}  // namespace tandem
