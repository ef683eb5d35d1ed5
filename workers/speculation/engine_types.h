// The speculative engine's public value types: what a request asks, what a
// session reports, the engine's options and what one step did. Shared by
// the engine (speculative_engine.h) and its parts, which do not include
// the engine itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/sampling_params.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/gamma_policy.h"
#include "workers/speculation/logit_processing.h"
#include "workers/speculation/pipeline_policy.h"
#include "workers/speculation/speculation_tuning.h"

namespace tandem {

// One token's log-probability under the target's distribution (as sampled
// from: after temperature, filters and penalties; greedy: the processed
// logits' log-softmax), and the `top` most likely tokens, most likely first.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

struct SpeculationRequest {
  std::vector<int32_t> prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // the stop token is emitted, then the session ends
  // Penalties, logit_bias, min_tokens (masking stop_ids), applied to the
  // target's logits (and the draft's) before standardization; the defaults
  // cost nothing. The engine fills in masked_stop_ids and prompt_length.
  LogitProcessing processing;
  GammaPolicy gamma;
  float lenience = 1.0f;  // 1 = lossless; anything else is reported as lossy
  std::string drafter;    // a drafter's name(); empty = the engine's first drafter
  bool pipeline = true;   // may be drafted ahead or apart (false: lockstep, for comparisons)
  int logprobs = -1;      // -1: none; N >= 0: each generated token's logprob and its top N
  bool prompt_logprobs = false;  // echo: the prompt's tokens scored by the target in prefill
  // Prefix caching: KV blocks are shared only between requests with the
  // same salt (cache_salt_hash of the API's cache_salt; 0: none).
  uint64_t cache_salt = 0;
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
  // Prompt tokens whose target KV came from the prefix cache when the
  // session was first admitted (usage.prompt_tokens_details.cached_tokens).
  int cached_tokens = 0;
  int ahead_drafts = 0;      // blocks drafted ahead of a block under verification
  int ahead_hits = 0;        // of those, verified without drafting again

  // The measured rate, as reported; γ is chosen from the prior-shrunk
  // estimate (GammaController::alpha).
  double alpha() const { return beta_count ? beta_sum / beta_count : 0.0; }
};

// failed: the session's own fault ended it (session_fault.h); `error` says
// what it was. The other sessions go on.
enum class FinishReason { running, length, stop, context, cancelled, failed };

struct SpeculationResult {
  std::vector<int32_t> tokens;  // generated tokens only
  FinishReason finish = FinishReason::running;
  SpeculationStats stats;
  std::optional<Error> error;   // when finish is failed
  std::vector<TokenLogprob> logprobs;         // one per token of `tokens`, when asked
  std::vector<TokenLogprob> prompt_logprobs;  // one per prompt token after the first, when asked
};

enum class SessionState { waiting, running, finished };

// What the engine is built with.
struct EngineOptions {
  int max_running = 64;         // sessions admitted at once
  int step_token_budget = 512;  // new tokens per target pass (see plan_chunks)
  SpeculationTuning tuning{};   // the γ controller's and pipelining's constants
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
  double verify_seconds = 0;   // on target rank 0 after the forward (verify, score)
  double draft_seconds = 0;   // all drafters' propose() calls
  int preempted = 0;          // sessions preempted this step
  double mean_gamma = 0;      // over the sessions that verified
  // The γ controller's view (gamma_controller.h): the speed-up over plain
  // decoding its choices predict (Theorem 3.8 with measured α, c and v,
  // the mean over the sessions that verify; 0 when none does), and the one
  // measured at this batch size (drafting vs plain steps' tokens per
  // second; 0 until both are measured).
  double predicted_speedup = 0;
  double measured_speedup = 0;
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

const char* finish_reason_name(FinishReason reason);
const char* session_state_name(SessionState state);

}  // namespace tandem
