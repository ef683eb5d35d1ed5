// SpeculativeEngine: Algorithm 1 batched over many sessions.
//
// One step() serves every running session at once:
//   1. draft   the drafter proposes γ_i tokens per session (batched passes);
//   2. verify  one ragged target pass scores each session's
//              [catch-up tokens, x_1..x_γ] and yields p_1..p_{γ+1};
//   3. accept  the backend's verification op keeps n_i drafts and adds one
//              target token (greedy sessions take the argmax fast path);
//   4. commit  tokens are appended, stop rules applied, both KV caches
//              truncated to the committed prefix.
// Outputs are exactly the target's: greedy output equals plain greedy
// decoding token for token, and sampled output has the target's
// distribution (Appendix A.1), with the same Philox draws as plain decoding
// so that γ = 0 reproduces it exactly.
// Not thread-safe: one engine thread calls add(), step() and take().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "kernels/sampling_params.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/gamma_policy.h"

namespace tandem {

struct SpeculationRequest {
  std::vector<int32_t> prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // the stop token is emitted, then the session ends
  GammaPolicy gamma;
  float lenience = 1.0f;  // 1 = lossless; anything else is reported as lossy
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

  double alpha() const { return beta_count ? beta_sum / beta_count : 0.0; }
};

enum class FinishReason { running, length, stop, context, cancelled };

struct SpeculationResult {
  std::vector<int32_t> tokens;  // generated tokens only
  FinishReason finish = FinishReason::running;
  SpeculationStats stats;
};

class SpeculativeEngine {
 public:
  SpeculativeEngine(LlamaModel& target, PagedKvCache& target_cache, Drafter& drafter);
  ~SpeculativeEngine();

  // Queues a session; it joins the next step. Checks the request (ids in
  // the vocabulary, room in the context) and throws Error naming the field.
  SessionKey add(SpeculationRequest request);
  // One batched draft + verify + commit for every running session.
  void step();
  // Runs step() until every session has finished.
  void run_to_completion();

  bool finished(SessionKey session) const;
  // Tokens generated so far (also while running, for streaming).
  const std::vector<int32_t>& output(SessionKey session) const;
  // Removes a finished (or cancelled) session and returns what it made.
  SpeculationResult take(SessionKey session);
  size_t running() const;

  // Engine-wide cost ratio c (draft pass / target pass), measured live.
  double cost_ratio() const { return cost_ratio_; }

 private:
  struct Session;
  // γ for this step: the policy's choice, capped by what may still be emitted.
  int choose_gamma(Session& session);
  // Appends the accepted drafts and the target's token, applying stop rules;
  // truncates both KV caches to the committed prefix or ends the session.
  void commit(Session& session, std::span<const int32_t> accepted, int32_t token);
  void finish(Session& session, FinishReason reason);

  LlamaModel& target_;
  PagedKvCache& cache_;
  Drafter& drafter_;
  std::map<SessionKey, std::unique_ptr<Session>> sessions_;  // ordered: deterministic steps
  SessionKey next_key_ = 1;
  double cost_ratio_ = 0.0;  // running mean of (draft seconds / pass) / (target seconds / pass)
  int cost_samples_ = 0;
  Buffer probs_;  // (rows, V) standardized target rows of one step
};

const char* finish_reason_name(FinishReason reason);

}  // namespace tandem
