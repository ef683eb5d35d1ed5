// StepPlanner: the engine's scheduler. It keeps the waiting queue and the
// running sessions, admits, plans each step's chunks, reserves the target
// KV the step needs (preempting when it must) and ends sessions. The rules
// themselves, as pure functions, are in step_scheduling.h.
//
// Scheduling (all of it invisible in the outputs: see below):
// - Admission. queue() adds a session as waiting. admit() admits waiting
//   sessions first in, first out while fewer than options.max_running run
//   and the target cache has free blocks for the session's first chunk plus
//   one block of headroom per running session (sessions admitted in the
//   same step count with their first chunks). The queue's front blocks the
//   rest (no overtaking, so no request waits forever); when nothing runs the
//   front is admitted whatever the headroom.
// - Prefix caching (when the target cache has it on: kv_cache.h). An
//   admitted session starts after the longest cached prefix of its tokens
//   (never its last token, nor prompt tokens it still has to score), and
//   only its uncached chunk counts against the headroom. Committed full
//   blocks are published after every pass and when a session ends or is
//   preempted (so a preempted session's re-prefill is mostly a cache hit).
//   The front of the queue waits while a running session is still
//   prefilling a longer shared prefix of its tokens, so that prefix is
//   computed once.
// - Chunked prefill. The new tokens of one target pass stay within
//   options.step_token_budget when possible: decoding sessions'
//   verification blocks first, then prefill chunks oldest first; every
//   session feeds at least one token per step. A session drafts and
//   verifies only once its final chunk fits (plan_chunks documents the
//   split). The draft model's catch-up is not chunked (ModelDrafter feeds
//   what it lacks in one pass).
// - Preemption by recomputation. When the target cache cannot reserve a
//   session's tokens for the step, the youngest running session (most
//   recently admitted) gives up its target and draft KV and goes back to the
//   front of the waiting queue with its tokens (prompt + output so far);
//   readmitted, it prefills all of them again and continues. A session that
//   cannot fit even alone is refused when it is added
//   (SpeculativeEngine::add); should one get here anyway, it ends with
//   FinishReason::length rather than loop.
// Why outputs do not depend on any of this: a block starts right after the
// committed tokens with the γ its policy chose, whatever the chunking, the
// batch or the preemptions; Philox draws are keyed by (seed, absolute
// position, purpose); and the CPU forward pass is batch-invariant, so K/V
// recomputed in other chunks or batches are bit-identical. (An automatic γ
// depends on measured times, so sampled output with γ = auto can differ
// between runs; greedy output never does.)
// Not thread-safe: owned by the engine thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "workers/speculation/engine_types.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/step_plan.h"
#include "workers/speculation/target_kv.h"

namespace tandem {

class StepPlanner {
 public:
  StepPlanner(TargetKv& kv, const EngineOptions& options) : kv_(kv), options_(options) {}
  ~StepPlanner();  // frees the running sessions' KV
  StepPlanner(const StepPlanner&) = delete;
  StepPlanner& operator=(const StepPlanner&) = delete;

  // A new session waits at the back of the queue.
  void queue(EngineSession& session) { waiting_.push_back(&session); }
  // Admission (see above), before each step.
  void admit();
  // The plan's entries: every running session but the plan's apart ones,
  // oldest first, each with the γ `choose` gives it, then the chunks they
  // feed within the step's token budget.
  using ChooseGamma = std::function<void(EngineSession&, StepPlan::Entry&)>;
  void plan(StepPlan& plan, const ChooseGamma& choose) const;
  // Reserves the target KV the plan needs, preempting the youngest sessions
  // (or ending one that cannot fit alone) and marking their entries dropped.
  void reserve(StepPlan& plan, StepReport& report);
  // Ends a session in any state: out of the queues, its KV freed (with
  // prefix caching, its committed full blocks stay cached unless it failed).
  void finish(EngineSession& session, FinishReason reason);
  // Prefix caching: the session's committed full blocks become reusable
  // (after every target pass it took part in).
  void publish(const EngineSession& session);

  const std::deque<EngineSession*>& waiting() const { return waiting_; }
  const std::vector<EngineSession*>& running() const { return running_; }
  uint64_t preemptions() const { return preemptions_; }

 private:
  // Gives back the session's target and draft KV and queues it at the front.
  void preempt(EngineSession& session, StepReport& report);
  // keep_prefix: publish its committed blocks before giving them back.
  void release_kv(EngineSession& session, bool keep_prefix);
  // Prefix caching: positions of the session's tokens it may reuse rather
  // than feed (not its last token, nor prompt tokens still to be scored).
  int reusable_tokens(const EngineSession& session) const;
  // A running session is prefilling a longer prefix of `session`'s tokens
  // than the `cached` positions the cache holds now.
  bool prefix_in_flight(const EngineSession& session, int cached) const;

  TargetKv& kv_;
  const EngineOptions& options_;
  std::deque<EngineSession*> waiting_;   // front is admitted first
  std::vector<EngineSession*> running_;  // admission order: back is the youngest
  uint64_t preemptions_ = 0;
};

}  // namespace tandem
