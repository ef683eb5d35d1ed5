// Choosing γ, the number of draft tokens per target step (paper §3.5).
//
// Theorem 3.8: with acceptance rate α and cost ratio c (one draft pass over
// one target pass), drafting γ tokens speeds decoding up by
//   S(γ) = (1 - α^(γ+1)) / ((1 - α)(γc + 1)).
// S(0) = 1 is plain decoding, so the best γ never makes a session slower in
// this model. `auto` picks argmax S over [0, max_gamma] from the session's
// running α and the engine's measured c; a fixed γ is used as given.
#pragma once

namespace tandem {

// Expected tokens per target step, (1 - α^(γ+1)) / (1 - α), computed as the
// sum α^0 + ... + α^γ so that α = 1 is fine.
double expected_tokens_per_step(double alpha, int gamma);

// Theorem 3.8's expected speed-up over plain decoding.
double expected_speedup(double alpha, double c, int gamma);

// The γ in [0, max_gamma] with the largest expected speed-up (smallest γ on ties).
int best_gamma(double alpha, double c, int max_gamma);

struct GammaPolicy {
  bool automatic = false;
  int gamma = 4;          // fixed γ, or the ceiling for automatic
  double prior_alpha = 0.6;  // α assumed before a session has measurements
  double prior_weight = 4;   // pseudo-observations the prior is worth

  // γ for a session whose verified positions so far have summed β to
  // beta_sum over beta_count positions, with measured cost ratio c.
  int choose(double beta_sum, double beta_count, double c) const;
};

}  // namespace tandem
