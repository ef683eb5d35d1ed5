#include "workers/speculation/gamma_policy.h"

namespace tandem {

double expected_tokens_per_step(double alpha, int gamma) {
  double sum = 0, power = 1;
  for (int i = 0; i <= gamma; ++i, power *= alpha) sum += power;
  return sum;
}

double expected_speedup(double alpha, double c, int gamma) {
  return expected_tokens_per_step(alpha, gamma) / (gamma * c + 1);
}

int best_gamma(double alpha, double c, int max_gamma) {
  int best = 0;
  double best_speedup = 1.0;
  for (int gamma = 1; gamma <= max_gamma; ++gamma) {
    const double s = expected_speedup(alpha, c, gamma);
    if (s > best_speedup) {
      best = gamma;
      best_speedup = s;
    }
  }
  return best;
}

int GammaPolicy::choose(double beta_sum, double beta_count, double c) const {
  if (!automatic) return gamma;
  // Shrink the session's own estimate toward the prior while it is young.
  const double alpha = (beta_sum + prior_alpha * prior_weight) / (beta_count + prior_weight);
  return best_gamma(alpha, c, gamma);
}

}  // namespace tandem
