#include "workers/speculation/gamma_policy.h"

namespace tandem {

double expected_tokens_per_step(double alpha, int gamma) {
  double sum = 0, power = 1;
  for (int i = 0; i <= gamma; ++i, power *= alpha) sum += power;
  return sum;
}

double expected_speedup(double alpha, double c, int gamma) {
  return expected_speedup(alpha, c, gamma, 1.0);
}

double expected_speedup(double alpha, double c, int gamma, double v_of_block) {
  return expected_tokens_per_step(alpha, gamma) / (gamma * c + v_of_block);
}

int best_gamma(double alpha, double c, int max_gamma, const StepCost& v) {
  auto v_of = [&](int k) { return v ? v(k) : 1.0; };
  int best = 0;
  // Plain decoding's own cost is v(1) per token (1 by definition; a caller's
  // curve that says otherwise is compared on its own terms).
  double best_speedup = expected_speedup(alpha, c, 0, v_of(1));
  for (int gamma = 1; gamma <= max_gamma; ++gamma) {
    const double s = expected_speedup(alpha, c, gamma, v_of(gamma + 1));
    if (s > best_speedup) {
      best = gamma;
      best_speedup = s;
    }
  }
  return best;
}

}  // namespace tandem
