// PipelinedDrafting: drafting while the target verifies (pipeline_policy.h
// says when it pays and why it is lossless). Each step it chooses the
// step's shape, picks the ping-pong group that sits the pass out, drafts
// during the target pass and keeps what it drafted as the sessions' ready
// blocks, verified later without drafting.
//
// A step of shape ahead or pingpong calls begin_propose() on the drafters
// just before the target pass and finish_propose() just after it, so a
// drafter that overlaps (a draft rank, a draft GPU) drafts meanwhile:
//   ahead     for a verifying session, the block after the one under
//             verification: its request is the committed text plus this
//             block's drafts, and asks one token more, the draft's guess at
//             the target's token. Kept as the session's ready block only if
//             verification accepts the whole block and the target's token
//             equals the guess; the ready block is then exactly what a plain
//             step would draft next (same prefix, same Philox positions).
//   pingpong  the sessions of the apart group, which sit this target pass
//             out, draft their next block from their committed text; the
//             next step verifies them while the others draft.
// Pipelining is for the default drafter (the draft model); sessions on
// others (n-gram lookup costs next to nothing) step as before.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <vector>

#include "workers/speculation/drafting.h"
#include "workers/speculation/engine_types.h"
#include "workers/speculation/gamma_controller.h"
#include "workers/speculation/pipeline_policy.h"
#include "workers/speculation/step_plan.h"

namespace tandem {

class PipelinedDrafting {
 public:
  // vocab: the rows of a proposal's q (a hit's first row is dropped).
  PipelinedDrafting(Drafting& drafting, const GammaController& gamma, int vocab)
      : drafting_(drafting), gamma_(gamma), vocab_(vocab) {}

  void set_policy(PipelinePolicy policy) { policy_ = policy; }
  const PipelinePolicy& policy() const { return policy_; }

  // Planning: the step's shape from the measured costs; ready blocks that
  // no longer stand dropped; for ping-pong, the sessions that draft apart
  // (pingpong_split many: of the decoding sessions with nothing ready, the
  // youngest) into plan.apart.
  void plan(const std::vector<EngineSession*>& running, StepPlan& plan);
  // Around the target pass: start the ahead and apart drafts, then collect
  // them (and what they cost).
  void begin(StepPlan& plan, StepReport& report);
  void finish(StepReport& report);
  // After commit: keeps ahead drafts whose guess came true and the apart
  // drafts as the sessions' ready blocks.
  void keep_ready_blocks(const StepPlan& plan, StepReport& report);

 private:
  struct ShapeChoice {
    StepShape shape = StepShape::plain;
    int apart = 0;  // ping-pong: decoding sessions that draft apart
  };
  ShapeChoice choose_shape(const std::vector<EngineSession*>& running);
  // The chance a block of γ drafts is accepted whole and the guess at the
  // target's token is right: α^(γ+1) with independent positions.
  double hit_rate(const EngineSession& session, int gamma) const;

  // One drafter's drafting during the target pass: ahead of entries, or
  // apart for ping-pong sessions not in the pass.
  struct Work {
    std::vector<DraftRequest> requests;
    std::vector<const StepPlan::Entry*> ahead_of;  // per request: the entry it drafts ahead of, or null
    std::vector<EngineSession*> sessions;          // per request
    std::vector<DraftProposal> proposals;
  };

  Drafting& drafting_;
  const GammaController& gamma_;
  int vocab_;
  PipelinePolicy policy_;
  int plain_steps_since_ahead_ = 0;  // for the probe (pipeline_policy.h)
  std::vector<Work> work_;           // per drafter, this step
};

}  // namespace tandem
