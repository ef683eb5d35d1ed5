// SpeculativeEngine: Algorithm 1 batched over many sessions, with the
// scheduling a server needs (admission, chunked prefill, preemption).
//
// One step() serves every running session at once:
//   0. admit   waiting sessions join, oldest first (see "Scheduling");
//   1. plan    the step's token budget is split into verification blocks and
//              prefill chunks (plan_chunks in step_scheduling.h); KV blocks
//              are reserved, preempting the youngest sessions if needed;
//   2. draft   each drafter proposes γ_i tokens for its sessions that verify
//              this step (one batched propose() per drafter);
//   3. verify  one ragged target pass scores each session's
//              [prefill chunk or catch-up tokens, x_1..x_γ] and yields
//              p_1..p_{γ+1} for the sessions that verify;
//   4. accept  the backend's verification op keeps n_i drafts and adds one
//              target token (greedy sessions take the argmax fast path);
//   5. commit  tokens are appended, stop rules applied, both KV caches
//              truncated to the committed prefix.
// Outputs are exactly the target's: greedy output equals plain greedy
// decoding token for token, and sampled output has the target's
// distribution (Appendix A.1), with the same Philox draws as plain decoding
// so that γ = 0 reproduces it exactly.
//
// Scheduling (all of it invisible in the outputs: see below):
// - Admission. add() queues a session as waiting. step() admits waiting
//   sessions first in, first out while fewer than limits.max_running run and
//   the target cache has free blocks for the session's first chunk plus one
//   block of headroom per running session (sessions admitted in the same
//   step count with their first chunks). The queue's front blocks the
//   rest (no overtaking, so no request waits forever); when nothing runs the
//   front is admitted whatever the headroom.
// - Chunked prefill. The new tokens of one target pass stay within
//   limits.step_token_budget when possible: decoding sessions' verification
//   blocks first, then prefill chunks oldest first; every session feeds at
//   least one token per step. A session drafts and verifies only once its
//   final chunk fits (plan_chunks documents the split). The draft model's
//   catch-up is not chunked (ModelDrafter feeds what it lacks in one pass).
// - Preemption by recomputation. When the target cache cannot reserve a
//   session's tokens for the step, the youngest running session (most
//   recently admitted) gives up its target and draft KV and goes back to the
//   front of the waiting queue with its tokens (prompt + output so far);
//   readmitted, it prefills all of them again and continues. A session that
//   cannot fit even alone ends with FinishReason::length.
// Why outputs do not depend on any of this: a block starts right after the
// committed tokens with the γ its policy chose, whatever the chunking, the
// batch or the preemptions; Philox draws are keyed by (seed, absolute
// position, purpose); and the CPU forward pass is batch-invariant, so K/V
// recomputed in other chunks or batches are bit-identical. (An automatic γ
// depends on measured times, so sampled output with γ = auto can differ
// between runs; greedy output never does.)
//
// Not thread-safe: one engine thread calls every method (the server posts
// requests to that thread and reads tokens back from it).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/sampling_params.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/gamma_policy.h"
#include "workers/speculation/pipeline_policy.h"
#include "workers/speculation/speculation_guard.h"
#include "workers/speculation/target_cost_model.h"
#include "workers/speculation/target_executor.h"

namespace tandem {

struct SpeculationRequest {
  std::vector<int32_t> prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // the stop token is emitted, then the session ends
  GammaPolicy gamma;
  float lenience = 1.0f;  // 1 = lossless; anything else is reported as lossy
  std::string drafter;    // a drafter's name(); empty = the engine's first drafter
  bool pipeline = true;   // may be drafted ahead or apart (false: lockstep, for comparisons)
};

// Per-session speculation statistics (what `usage.speculation` reports).
struct SpeculationStats {
  int target_steps = 0;      // verification passes this session took part in
  int draft_tokens = 0;      // Σ γ proposed
  int accepted_tokens = 0;   // Σ n accepted by verification (before stop rules cut a block)
  double beta_sum = 0;       // Σ β over verified draft positions (α estimate)
  int beta_count = 0;
  double draft_seconds = 0;  // wall time of the steps' draft and verify phases
  double target_seconds = 0;
  int last_gamma = 0;
  int prefill_tokens = 0;    // committed tokens fed before verifying (re-prefills included)
  int preemptions = 0;       // times this session was preempted
  int ahead_drafts = 0;      // blocks drafted ahead of a block under verification
  int ahead_hits = 0;        // of those, verified without drafting again

  double alpha() const { return beta_count ? beta_sum / beta_count : 0.0; }
};

enum class FinishReason { running, length, stop, context, cancelled };

struct SpeculationResult {
  std::vector<int32_t> tokens;  // generated tokens only
  FinishReason finish = FinishReason::running;
  SpeculationStats stats;
};

enum class SessionState { waiting, running, finished };

struct EngineLimits {
  int max_running = 64;        // sessions admitted at once
  int step_token_budget = 512;  // new tokens per target pass (see plan_chunks)
};

// One session's part in the last step.
struct StepSessionReport {
  SessionKey key = 0;
  std::string drafter;     // the drafter's name
  int gamma = 0;           // tokens drafted (0 when it only prefilled)
  int accepted = 0;        // drafts kept by verification
  int emitted = 0;         // tokens appended to its output (stop rules applied)
  int fed = 0;             // new tokens it put in the target pass (chunk + drafts)
  int prefill_tokens = 0;  // committed tokens fed while prefilling (0 when decoding)
  bool verified = false;   // its final chunk was in the pass
};

// What the last step() did, for metrics.
struct StepReport {
  std::vector<StepSessionReport> sessions;  // every session fed in the target pass
  int target_tokens = 0;      // new tokens in the target pass
  double target_seconds = 0;  // the target pass as the engine saw it (forward, verify, transfers)
  double forward_seconds = 0;  // the forward pass on target rank 0
  double communication_seconds = 0;  // of which inside tensor-parallel collectives
  double draft_seconds = 0;   // all drafters' propose() calls
  int preempted = 0;          // sessions preempted this step
  double mean_gamma = 0;      // over the sessions that verified
  // Pipelined drafting (pipeline_policy.h).
  StepShape shape = StepShape::plain;
  double step_seconds = 0;        // the whole step, wall time
  double draft_busy_seconds = 0;  // drafting done in the step, overlapped or not
  double draft_wait_seconds = 0;  // of the step, the engine waiting for drafts
  int apart_sessions = 0;         // ping-pong: sessions drafted while the target verified others
  int ahead_drafts = 0;           // blocks drafted ahead during the target pass
  int ahead_hits = 0;             // ready blocks from earlier ahead drafts used this step
  int ahead_misses = 0;           // ahead drafts dropped this step
};

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
                    EngineLimits limits = {});
  SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache,
                    std::vector<Drafter*> drafters, EngineLimits limits = {});
  SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache, Drafter& drafter,
                    EngineLimits limits = {});
  ~SpeculativeEngine();
  SpeculativeEngine(const SpeculativeEngine&) = delete;
  SpeculativeEngine& operator=(const SpeculativeEngine&) = delete;

  // Queues a session as waiting; a later step() admits it. Checks the request
  // (ids in the vocabulary, room in the context and in the whole target
  // cache, a known drafter) and throws Error(invalid_argument) naming the
  // field, changing nothing.
  SessionKey add(SpeculationRequest request);
  // Admission, then one batched draft + verify + commit for the running
  // sessions. Does nothing when no session waits or runs.
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
  // Removes a session in any state and returns what it made; a waiting or
  // running one ends as cancelled and its KV blocks are freed at once.
  SpeculationResult take(SessionKey session);

  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  uint64_t preemptions() const { return preemptions_; }
  uint64_t admissions() const { return admissions_; }  // readmissions after preemption included
  const StepReport& last_step() const { return last_step_; }
  const EngineLimits& limits() const { return limits_; }
  const TargetCostModel& cost_model() const { return cost_model_; }
  // The drafter's cost ratio c at the last step's batch: D(B_d) / T(B), one
  // draft pass over the B_d sessions using it (from its own bucketed cost
  // model of measured passes) over T(B) from the target's cost model; 0
  // until it has drafted. Unknown names throw Error(invalid_argument).
  double cost_ratio(const std::string& drafter) const;
  std::vector<std::string> drafter_names() const;

  // Pipelined drafting (pipeline_policy.h): automatic by default; it only
  // acts when the default drafter overlaps() with target passes.
  void set_pipeline(PipelinePolicy policy) { pipeline_ = policy; }
  const PipelinePolicy& pipeline() const { return pipeline_; }

 private:
  struct Session;
  struct DrafterSlot {
    Drafter* drafter = nullptr;
    std::string name;
    // Seconds of one draft pass by the number of sessions drafting in it
    // (the same bucketed model as the target's): c at batch B is
    // D(B_d) / T(B), B_d the running sessions that use this drafter.
    TargetCostModel pass_cost;
    // Seconds of drafting ahead (a whole call) by sessions, as the drafter
    // measured it: what a pipelined step hides behind the target pass.
    TargetCostModel ahead_cost;
    int plain_steps_since_ahead = 0;  // for the probe (pipeline_policy.h)
    double cost_ratio = 0;  // c at the last step's batch (reported)
  };
  struct StepPlan;

  Session& get(SessionKey session) const;
  void check(const SpeculationRequest& request) const;
  void admit();
  // Gives back the session's target and draft KV and queues it at the front.
  void preempt(Session& session);
  // Reserves the target KV the plan needs, preempting the youngest sessions
  // (or ending one that cannot fit alone); drops what was preempted.
  void reserve(StepPlan& plan);
  StepPlan plan_step();
  void draft(StepPlan& plan);
  // The shape of this step (pipeline_policy.h) from the measured costs,
  // and for ping-pong how many decoding sessions draft apart
  // (pingpong_split): sessions with a ready block verify, and of the rest
  // the youngest draft, up to that many.
  struct ShapeChoice {
    StepShape shape = StepShape::plain;
    int apart = 0;
  };
  ShapeChoice choose_step_shape();
  // Pipelined drafting around the target pass: begin before it, finish after.
  void begin_pipelined_drafts(StepPlan& plan);
  void finish_pipelined_drafts(StepPlan& plan);
  // After commit: keeps ahead drafts whose guess came true and the apart
  // drafts as the sessions' ready blocks.
  void keep_ready_blocks(StepPlan& plan);
  // Feeds every planned session to one target pass, which verifies the
  // blocks (outcomes and β statistics). False when nothing was fed.
  bool run_target(StepPlan& plan);
  // Runs one target pass; the sequences released since the last one go with it.
  void run_target_step(TargetStep& step, std::span<const DeviceRows> local_q,
                       TargetResult& result);
  void release_sequence(SequenceId seq);
  void truncate_sequence(SequenceId seq, int length);  // and tell the executor's cache
  // One calibration pass of `tokens` new tokens (see speculative_calibration.cpp).
  double timed_pass(int tokens);
  void commit_and_report(StepPlan& plan);
  void record_costs(const StepPlan& plan);
  // Tells the guard what a decode step achieved.
  void record_throughput(const StepPlan& plan, double seconds);
  struct GammaChoice {
    int gamma = 0;             // the policy's choice (or a probe), capped by what may be emitted
    bool policy_zero = false;  // the automatic policy itself said 0
    bool probe = false;        // γ = 1 only to re-measure α
  };
  // allow_drafting: the guard's verdict for automatic sessions this step.
  GammaChoice choose_gamma(const Session& session, const StepCost& v, double c,
                           bool allow_drafting) const;
  // c for a drafter when `drafting` sessions use it and `batch` run in all.
  double drafter_cost(const DrafterSlot& slot, int drafting, int batch) const;
  // Appends the accepted drafts and the target's token, applying stop rules;
  // truncates both KV caches to the committed prefix or ends the session.
  // Returns the tokens appended.
  int commit(Session& session, std::span<const int32_t> accepted, int32_t token);
  void finish(Session& session, FinishReason reason);
  void release_kv(Session& session);

  void init(std::vector<Drafter*> drafters);

  ModelConfig config_;
  PagedKvCache& cache_;
  std::unique_ptr<TargetExecutor> owned_target_;  // the in-process runner, when given a model
  TargetExecutor* target_ = nullptr;
  std::vector<int64_t> released_;  // KV sequences freed since the last target pass
  std::vector<int64_t> truncated_;  // KV sequences truncated since then...
  std::vector<int32_t> truncated_lengths_;  // ...to these lengths
  uint64_t target_steps_ = 0;
  std::vector<DrafterSlot> drafters_;
  EngineLimits limits_;
  std::map<SessionKey, std::unique_ptr<Session>> sessions_;
  std::deque<Session*> waiting_;   // front is admitted first
  std::vector<Session*> running_;  // admission order: back is the youngest
  SessionKey next_key_ = 1;
  uint64_t admissions_ = 0;
  uint64_t preemptions_ = 0;
  TargetCostModel cost_model_;
  SpeculationGuard guard_;  // measured drafting vs plain throughput per batch size
  PipelinePolicy pipeline_;
  StepReport last_step_;
};

const char* finish_reason_name(FinishReason reason);
const char* session_state_name(SessionState state);

}  // namespace tandem
