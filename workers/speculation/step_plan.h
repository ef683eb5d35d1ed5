// StepPlan: one step being built, passed from part to part: the step
// planner fills each running session's entry (its chunk, its γ), drafting
// fills the proposals, the target pass the outcomes, and the engine commits
// them. Not part of the public API.
#pragma once

#include <chrono>
#include <vector>

#include "kernels/verify_types.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/pipeline_policy.h"
#include "workers/speculation/step_scheduling.h"
#include "workers/speculation/target_step.h"

namespace tandem {

struct EngineSession;

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The step being built: each running session's part, then what the step
// measured.
struct StepPlan {
  struct Entry {
    EngineSession* session = nullptr;
    ChunkPlan chunk;           // committed tokens fed; whether it verifies
    int gamma = 0;             // drafts wanted when it verifies
    bool policy_zero = false;  // the automatic policy said 0 (probe bookkeeping)
    bool probe = false;        // drafting one token only to re-measure α
    bool dropped = false;      // preempted or ended while reserving
    DraftProposal proposal;
    int start = 0;              // its cached target positions before the pass
    std::vector<int32_t> feed;  // committed tokens fed, then the drafts
    int first_row = -1;         // its first logits row, -1 when it does not verify
    VerifyOutcome outcome;      // n accepted and the target's token, when it verifies
    SessionFault fault = SessionFault::none;  // its own fault, found drafting or verifying
    std::vector<TokenLogprob> logprobs;  // the outcome's n + 1 scores, when the session asks
    int prompt_scores = 0;               // prompt tokens its rows score this pass
    bool from_ready = false;    // its block was drafted in an earlier step
    // Drafting ahead during the target pass: the request's tokens
    // (committed text, then this block's drafts), alive until it returns.
    std::vector<int32_t> ahead_tokens;
  };
  std::vector<Entry> entries;  // admission order, oldest first
  int batch = 0;               // B: running sessions when planned
  std::vector<double> draft_seconds;  // per drafter
  std::vector<int> draft_passes;      // per drafter
  std::vector<int> draft_sessions;    // per drafter: sessions it drafted for
  int rows = 0;                       // R: logits rows of the target pass
  Clock::time_point start;            // when the target pass began
  double target_seconds = 0;          // the forward pass alone
  TargetResult result;                // what the target pass returned
  StepShape shape = StepShape::plain;
  std::vector<EngineSession*> apart;  // ping-pong: drafting while the others verify
  std::vector<int> apart_gamma;       // the γ each of them drafts
};

}  // namespace tandem
