// Statistics the statistical tests share: chi-square and normal critical
// values computed (not looked up), binomial z-scores and Pearson's
// chi-square goodness of fit with small cells pooled. Header-only; tests only.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tandem::test_stats {

// Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma, from the
// power series P = x^a e^-x / Γ(a+1) · sum_n x^n / ((a+1)...(a+n)), which
// converges for every x; at Q ~ 1e-4 the subtraction costs 4 of 16 digits.
inline double upper_gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  double term = 1.0, sum = 1.0;
  for (int n = 1; n < 100000 && term > sum * 1e-17; ++n) sum += term *= x / (a + n);
  return 1.0 - sum * std::exp(a * std::log(x) - x - std::lgamma(a + 1.0));
}

// Critical value of chi-square with `dof` degrees of freedom at false-alarm
// rate alpha: the x with Q(dof/2, x/2) = alpha, by bisection (Q falls
// monotonically in x). Checked against closed forms in CriticalValues.
inline double chi_square_critical(int dof, double alpha) {
  double lo = 0.0, hi = dof + 200.0 + 50.0 * std::sqrt(static_cast<double>(dof));
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (upper_gamma_q(0.5 * dof, 0.5 * mid) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// z with P(N(0,1) > z) = alpha, by bisection on erfc.
inline double normal_upper_quantile(double alpha) {
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// (k - N π) / sd of a Binomial(N, π) count k; 0 or ±inf when π is 0 or 1.
inline double binomial_z(long k, long trials, double pi) {
  const double mean = trials * pi, variance = trials * pi * (1.0 - pi);
  if (variance <= 0.0) return k == std::lround(mean) ? 0.0 : (k > mean ? 1.0 : -1.0) * HUGE_VAL;
  return (k - mean) / std::sqrt(variance);
}

struct Fit {
  double statistic = 0.0;
  int dof = 0;
  double critical = 0.0;
};

// Pearson's chi-square of counts against probs (per cell). The chi-square
// approximation wants >= 5 expected per cell, so the smallest cells are pooled
// until the pool expects >= 5. A probability-0 cell must stay empty: one draw
// there makes the statistic +inf (an exact check, not a statistical one).
// alpha: the false-alarm rate the returned critical value is for.
inline Fit chi_square_fit(const std::vector<long>& counts, const std::vector<double>& probs,
                          double alpha) {
  const long trials = std::accumulate(counts.begin(), counts.end(), 0L);
  std::vector<size_t> cells;
  Fit fit;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] > 0.0) cells.push_back(i);
    if (probs[i] <= 0.0 && counts[i] > 0) fit.statistic = HUGE_VAL;
  }
  std::sort(cells.begin(), cells.end(), [&](size_t a, size_t b) { return probs[a] < probs[b]; });
  double pool_expected = 0.0, pool_observed = 0.0;
  int groups = 0;
  for (size_t i : cells) {
    const double expected = probs[i] * trials;
    if (expected < 5.0 || (pool_expected > 0.0 && pool_expected < 5.0)) {
      pool_expected += expected;
      pool_observed += counts[i];
      continue;
    }
    fit.statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++groups;
  }
  if (pool_expected > 0.0) {
    const double d = pool_observed - pool_expected;
    fit.statistic += d * d / pool_expected;
    ++groups;
  }
  fit.dof = std::max(1, groups - 1);
  fit.critical = chi_square_critical(fit.dof, alpha);
  return fit;
}

}  // namespace tandem::test_stats
