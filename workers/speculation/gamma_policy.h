// Choosing γ, the number of draft tokens per target step (paper §3.5,
// extended for batched serving as docs/design.md, "Goals" 2, asks).
//
// Theorem 3.8: with acceptance rate α and cost ratio c (one draft pass over
// one target pass), drafting γ tokens speeds decoding up by
//   S(γ) = (1 - α^(γ+1)) / ((1 - α)(γc + 1)).
// It assumes a target pass over γ+1 tokens per session costs what a pass
// over one does. Batched, it does not: the model we choose γ by is
//   S(γ) = (1 - α^(γ+1)) / ((1 - α)(γc + v(γ+1))),
// where v(k) is the time of a target pass carrying k new tokens per session
// relative to one token per session, for the current batch (v(1) = 1;
// TargetCostModel measures it). A flat v (v ≡ 1) is Theorem 3.8.
// S(0) = 1 is plain decoding, and γ > 0 is chosen only when it beats that:
// speculation never makes a server slower in this model. When the target is
// compute-bound (v(k) ≈ k) no γ beats 1 for α < 1, so γ = 0.
#pragma once

#include <functional>

namespace tandem {

// v(k): the cost of a target pass with k new tokens per session relative to
// one per session. An empty function means v ≡ 1 (Theorem 3.8's assumption).
using StepCost = std::function<double(int k)>;

// Expected tokens per target step, (1 - α^(γ+1)) / (1 - α), computed as the
// sum α^0 + ... + α^γ so that α = 1 is fine.
double expected_tokens_per_step(double alpha, int gamma);

// Theorem 3.8's expected speed-up over plain decoding (v ≡ 1).
double expected_speedup(double alpha, double c, int gamma);
// The batched model's speed-up, given v(γ+1) (and v(1) = 1).
double expected_speedup(double alpha, double c, int gamma, double v_of_block);

// The γ in [0, max_gamma] with the largest expected speed-up under v
// (smallest γ on ties, so γ = 0 unless some γ strictly beats plain decoding).
int best_gamma(double alpha, double c, int max_gamma, const StepCost& v = {});

// A request's choice: a fixed γ, or automatic up to a ceiling. The engine's
// GammaController turns it into each step's γ (gamma_controller.h).
struct GammaPolicy {
  bool automatic = false;
  int gamma = 4;  // fixed γ, or the ceiling for automatic
};

}  // namespace tandem
