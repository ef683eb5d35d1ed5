// GammaController: every decision about γ, the number of draft tokens a
// session verifies per step, in one place. Its inputs, each kept here:
// - the α estimate: a session's measured Σβ / n shrunk toward the prior
//   (tuning.prior_alpha, worth tuning.prior_weight positions), so that a
//   young session's first positions do not swing γ;
// - c per drafter: one draft pass over the sessions using it (measured by
//   Drafting) over one target pass at the batch;
// - v(k) for the batch, from the target's cost model (target_cost_model.h),
//   timed by calibrate() and then by every pass;
// - the guard (speculation_guard.h): measured drafting vs plain throughput
//   per batch size, which can overrule the model for automatic sessions.
// The choice itself is the request's GammaPolicy: a fixed γ, or best_gamma
// (gamma_policy.h: Theorem 3.8 and its batched form) at the estimated α, c
// and v, up to the policy's ceiling. Then probing: a session whose best γ
// is 0 still drafts one token after tuning.probe_every verifying steps, so
// its α can recover when the text becomes predictable; each probe that
// does not bring it back doubles the interval, up to tuning.max_probe_every
// (a probe costs the draft cache's catch-up over every token since the
// last one, which under heavy batching is most of what drafting costs).
// Last, γ is capped by what the session may still emit.
// Not thread-safe: owned by the engine thread.
#pragma once

#include <vector>

#include "workers/speculation/engine_types.h"
#include "workers/speculation/gamma_policy.h"
#include "workers/speculation/speculation_guard.h"
#include "workers/speculation/speculation_tuning.h"
#include "workers/speculation/target_cost_model.h"

namespace tandem {

struct DrafterSlot;
struct EngineSession;

struct GammaChoice {
  int gamma = 0;             // the policy's choice (or a probe), capped by what may be emitted
  bool policy_zero = false;  // the automatic policy itself said 0
  bool probe = false;        // γ = 1 only to re-measure α
};

class GammaController {
 public:
  // context_length: the target's context, which no block may run past.
  explicit GammaController(const SpeculationTuning& tuning = {}, int context_length = 1 << 30);

  const SpeculationTuning& tuning() const { return tuning_; }

  // The α estimate from Σβ over n verified positions (see above).
  double alpha(double beta_sum, double beta_count) const;
  double alpha(const SpeculationStats& stats) const {
    return alpha(stats.beta_sum, stats.beta_count);
  }
  // The policy's γ: fixed, or best_gamma at the estimated α with cost ratio
  // c and the target cost curve v (empty: v ≡ 1).
  int policy_gamma(const GammaPolicy& policy, double beta_sum, double beta_count, double c,
                   const StepCost& v = {}) const;

  // Before a step at batch B = running.size(): v(k) for every block length
  // a session may choose, c for each drafter (kept in its slot as the
  // reported cost ratio where sessions use it), and the guard's verdict.
  void begin_step(const std::vector<EngineSession*>& running, std::vector<DrafterSlot>& drafters);
  // The session's γ this step (begin_step first).
  GammaChoice choose(const EngineSession& session) const;
  // γ capped by what the session may still emit once `ahead` more tokens
  // are committed: each step emits at least one token, so drafting past
  // max_tokens - 1 more (or past the context) would only be thrown away.
  int cap(const EngineSession& session, int gamma, int ahead = 0) const;
  // The speed-up the session's γ promises this step (begin_step first):
  // Theorem 3.8 with the measured α (its estimate), c (its drafter's at
  // this batch) and v(γ+1) (the target's cost model at this batch):
  //   S = (1 − α^(γ+1)) / ((1 − α)(γc + v(γ+1))), 1 at γ = 0.
  double predicted_speedup(const EngineSession& session, int gamma) const;
  // What the steps measured at this batch size: tokens per second of decode
  // steps that drafted over those that did not (the guard's rates); 0 until
  // both kinds have been measured.
  double measured_speedup(int batch) const;
  // After the session's block was verified: the probe bookkeeping (`drafted`
  // tokens were drafted for it with this choice).
  void verified(EngineSession& session, const GammaChoice& choice, int drafted) const;

  // What the steps measured: one target pass of `tokens` new tokens, and a
  // whole step (the guard learns from decode steps only).
  void record_pass(int tokens, double seconds) { cost_model_.record(tokens, seconds); }
  void record_step(int batch, const StepReport& step);

  TargetCostModel& cost_model() { return cost_model_; }
  const TargetCostModel& cost_model() const { return cost_model_; }

 private:
  // c for a drafter when `drafting` sessions use it and `batch` run in all.
  double drafter_cost(const DrafterSlot& slot, int drafting, int batch) const;

  SpeculationTuning tuning_;
  int context_length_;
  TargetCostModel cost_model_;
  SpeculationGuard guard_;
  int batch_ = 1;           // B at this step
  std::vector<double> v_;  // v[k] = v(B, k) at this step's batch
  std::vector<double> c_;  // per drafter, at this step's batch
  bool allow_drafting_ = true;  // the guard's verdict this step
};

}  // namespace tandem
