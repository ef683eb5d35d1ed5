// SpeculativeEngine: Algorithm 1 batched over many sessions, with the
// scheduling a server needs (admission, chunked prefill, preemption).
//
// One step() serves every running session at once, in the five steps of
// the step protocol, each done by one part the engine owns:
//   1. admit, plan  waiting sessions join, oldest first; the step's token
//                   budget is split into verification blocks and prefill
//                   chunks; KV blocks are reserved, preempting the youngest
//                   sessions if needed (StepPlanner, step_planner.h). Each
//                   verifying session's γ comes from the GammaController
//                   (gamma_controller.h), the step's shape from
//                   PipelinedDrafting (pipelined_drafting.h);
//   2. draft        each drafter proposes γ_i tokens for its sessions that
//                   verify this step (one batched propose() per drafter:
//                   Drafting, drafting.h), unless a block drafted during
//                   an earlier target pass is ready; pipelined drafting
//                   starts the drafts that run during this step's pass;
//   3. verify       one ragged target pass scores each session's
//                   [prefill chunk or catch-up tokens, x_1..x_γ] and yields
//                   p_1..p_{γ+1} for the sessions that verify (TargetPass,
//                   target_pass.h, over the TargetExecutor);
//   4. accept       the backend's verification op keeps n_i drafts and adds
//                   one target token (greedy sessions take the argmax fast
//                   path); the outcomes and β statistics come back;
//   5. commit       tokens are appended, stop rules applied, both KV caches
//                   truncated to the committed prefix (speculative_commit.cpp);
//                   the step's costs go to the γ controller and drafting.
// Outputs are exactly the target's: greedy output equals plain greedy
// decoding token for token, and sampled output has the target's
// distribution (Appendix A.1), with the same Philox draws as plain decoding
// so that γ = 0 reproduces it exactly. None of the scheduling shows in the
// outputs (step_planner.h says why), nor does pipelining (pipeline_policy.h).
//
// Not thread-safe: one engine thread calls every method (the server posts
// requests to that thread and reads tokens back from it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/drafting.h"
#include "workers/speculation/engine_types.h"
#include "workers/speculation/gamma_controller.h"
#include "workers/speculation/pipelined_drafting.h"
#include "workers/speculation/speculative_session.h"
#include "workers/speculation/step_planner.h"
#include "workers/speculation/target_executor.h"
#include "workers/speculation/target_kv.h"
#include "workers/speculation/target_pass.h"

namespace tandem {

class SpeculativeEngine {
 public:
  // Drafters by name (their name() values, unique; the first is the
  // default). The engine does not own them.
  //
  // The target's passes run on `target`; `target_cache` is the engine's
  // account of the target's KV blocks (admission, reservation, truncation),
  // which the executor's cache follows. Given a LlamaModel, the engine runs
  // it in this process over target_cache itself.
  SpeculativeEngine(const ModelConfig& target_config, PagedKvCache& target_cache,
                    TargetExecutor& target, std::vector<Drafter*> drafters,
                    EngineOptions options = {});
  SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                    std::vector<Drafter*> drafters, EngineOptions options = {});
  SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache, Drafter& drafter,
                    EngineOptions options = {});
  ~SpeculativeEngine();
  SpeculativeEngine(const SpeculativeEngine&) = delete;
  SpeculativeEngine& operator=(const SpeculativeEngine&) = delete;

  // Queues a session as waiting; a later step() admits it. Checks the request
  // (ids in the vocabulary, room in the context, room in the whole target
  // cache for the prompt and max_new_tokens, sampling parameters the ops
  // take, a known drafter) and throws Error(invalid_argument) starting with
  // the field's name ("top_p: ..."), changing nothing.
  SessionKey add(SpeculationRequest request);
  // Admission, then one batched draft + verify + commit for the running
  // sessions. Does nothing when no session waits or runs. A session's own
  // fault found in the step (session_fault.h) ends it alone, as
  // FinishReason::failed with its error in the result; the others' outputs
  // are as if it had never been there. An exception is the step's own
  // failure (the backend, a lost rank): no session can be trusted then.
  void step();
  // Runs step() until no session waits or runs.
  void run_to_completion();
  // Times target passes of 1, 2, 4, ... up to step_token_budget new tokens
  // over scratch KV sequences (released afterwards) so that v(k) is known
  // before serving. Call while no session runs (a server calls it once at
  // start); throws Error(internal) otherwise.
  void calibrate();

  SessionState state(SessionKey session) const;
  bool finished(SessionKey session) const { return state(session) == SessionState::finished; }
  bool admitted(SessionKey session) const { return state(session) == SessionState::running; }
  int prompt_length(SessionKey session) const;
  // Tokens generated so far (also while running, for streaming).
  const std::vector<int32_t>& output(SessionKey session) const;
  // Their scores, one per output token, when the request asked (logprobs
  // >= 0; else empty); and the prompt's, one per prompt token after the
  // first once it is prefilled, when it asked (prompt_logprobs).
  const std::vector<TokenLogprob>& output_logprobs(SessionKey session) const;
  const std::vector<TokenLogprob>& prompt_logprobs(SessionKey session) const;
  // Why it finished (running while it has not).
  FinishReason finish_reason(SessionKey session) const;
  // Removes a session in any state and returns what it made; a waiting or
  // running one ends as cancelled and its KV blocks are freed at once.
  SpeculationResult take(SessionKey session);

  size_t waiting() const { return planner_.waiting().size(); }
  size_t running() const { return planner_.running().size(); }
  uint64_t preemptions() const { return planner_.preemptions(); }
  const StepReport& last_step() const { return last_step_; }
  const EngineOptions& options() const { return options_; }
  const TargetCostModel& cost_model() const { return gamma_.cost_model(); }
  // The drafter's cost ratio c at the last step's batch: D(B_d) / T(B), one
  // draft pass over the B_d sessions using it (from its own bucketed cost
  // model of measured passes) over T(B) from the target's cost model; 0
  // until it has drafted. Unknown names throw Error(invalid_argument).
  double cost_ratio(const std::string& drafter) const;
  std::vector<std::string> drafter_names() const { return drafting_.names(); }
  // Prefix caching, when the target cache has it on (kv_cache.h): prompt
  // tokens looked up at admission and found cached, since the engine was built.
  const PrefixCacheCounters& target_prefix_counters() const {
    return kv_.cache().prefix_counters();
  }

  // Pipelined drafting (pipeline_policy.h): automatic by default; it only
  // acts when the default drafter overlaps() with target passes.
  void set_pipeline(PipelinePolicy policy) { pipelining_.set_policy(policy); }
  const PipelinePolicy& pipeline() const { return pipelining_.policy(); }

 private:
  SpeculativeEngine(const ModelConfig& target_config, PagedKvCache& target_cache,
                    std::unique_ptr<TargetExecutor> owned_target, TargetExecutor* target,
                    const std::vector<Drafter*>& drafters, EngineOptions options);

  EngineSession& get(SessionKey session) const;
  void check(const SpeculationRequest& request) const;
  // Step 1's plan: the γ controller's inputs, the step's shape and ping-pong
  // group, then the planner's entries with each session's γ.
  StepPlan plan_step();
  // After drafting: sessions whose drafter found their own fault end,
  // and leave the target pass.
  void end_faulted_drafts(StepPlan& plan);
  // Ends a session for its own fault, with the error its client gets.
  void fail(EngineSession& session, SessionFault fault);
  // Step 5: appends the accepted drafts and the target's tokens, reports;
  // ends the sessions whose blocks came back with a fault.
  void commit(StepPlan& plan);
  // One session's tokens, stop rules applied; truncates both KV caches to
  // the committed prefix or ends the session. Returns the tokens appended.
  int commit_tokens(EngineSession& session, std::span<const int32_t> accepted, int32_t token,
                    std::span<const TokenLogprob> logprobs);

  ModelConfig config_;
  EngineOptions options_;
  TargetKv kv_;
  std::unique_ptr<TargetExecutor> owned_target_;  // the in-process runner, when given a model
  TargetPass target_;
  Drafting drafting_;
  GammaController gamma_;
  PipelinedDrafting pipelining_;
  std::map<SessionKey, std::unique_ptr<EngineSession>> sessions_;  // outlives the planner's queues
  StepPlanner planner_;
  SessionKey next_key_ = 1;
  StepReport last_step_;
};

}  // namespace tandem
