// SpeculativeEngine::StepPlan: the step being built, shared by the engine's
// step files (speculative_step.cpp: plan, draft, verify, commit;
// speculative_pipeline.cpp: drafting while the target verifies). Not part
// of the public API.
#pragma once

#include <chrono>
#include <vector>

#include "workers/speculation/speculative_engine.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/step_scheduling.h"

namespace tandem {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The step being built: each running session's part, then what the step
// measured.
struct SpeculativeEngine::StepPlan {
  struct Entry {
    Session* session = nullptr;
    ChunkPlan chunk;          // committed tokens fed; whether it verifies
    int gamma = 0;            // drafts wanted when it verifies
    bool policy_zero = false;  // the automatic policy said 0 (probe bookkeeping)
    bool probe = false;        // drafting one token only to re-measure α
    bool dropped = false;     // preempted or ended while reserving
    DraftProposal proposal;
    int start = 0;              // its cached target positions before the pass
    std::vector<int32_t> feed;  // committed tokens fed, then the drafts
    int first_row = -1;         // its first logits row, -1 when it does not verify
    VerifyOutcome outcome;      // n accepted and the target's token, when it verifies
    bool from_ready = false;    // its block was drafted in an earlier step
    // Drafting ahead during the target pass: the request's tokens (committed
    // text, then this block's drafts) and what came back: the guess for the
    // target's token, then the next block.
    std::vector<int32_t> ahead_tokens;
    DraftProposal ahead;
    bool drafting_ahead = false;
  };
  // One drafter's drafting during the target pass: ahead of entries, or
  // apart for ping-pong sessions not in the pass.
  struct Pipelined {
    std::vector<DraftRequest> requests;
    std::vector<Entry*> ahead_of;    // per request: the entry it drafts ahead of, or null
    std::vector<Session*> sessions;  // per request
    std::vector<DraftProposal> proposals;
    double wait_seconds = 0;         // blocked in finish_propose
  };
  std::vector<Entry> entries;  // admission order, oldest first
  int batch = 0;               // B: running sessions when planned
  std::vector<double> v;       // v[k] = v(B, k) for k up to the longest block wanted
  std::vector<double> draft_seconds;  // per drafter
  std::vector<int> draft_passes;      // per drafter
  std::vector<int> draft_sessions;    // per drafter: sessions it drafted for
  int rows = 0;                       // R: logits rows of the target pass
  Clock::time_point start;            // when the target pass began
  double target_seconds = 0;          // the forward pass alone
  StepShape shape = StepShape::plain;
  std::vector<Session*> apart;        // ping-pong: drafting while the others verify
  std::vector<int> apart_gamma;       // the γ each of them drafts
  std::vector<Pipelined> pipelined;   // per drafter
};

}  // namespace tandem
