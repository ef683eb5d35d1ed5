// Statistical tests of the Gumbel-max draw (cpu::gumbel_row, Coupling::gumbel):
//   1. its marginal is p: chi-square goodness of fit of draws at distinct
//      positions against a fixed row, and the same statistic catching planted
//      bugs (noise reused across positions);
//   2. consecutive positions are independent: pairs against p ⊗ p, catching
//      noise shared by neighbouring positions, which the marginal cannot see;
//   3. the coupling's acceptance: the rate at which the draft's draw from q
//      equals the target's from p with the same noise is at least
//      (1 - TV)/(1 + TV) (Daliri, Musco, Suresh 2024), and equals the exact
//      rate of the exponential race, computed here in closed form.
//
// False alarms: each statistical assertion has rate 1e-4 on its own; there are
// 21, so a correct sampler fails a run with probability < 3e-3 (union bound).
// Inputs and seeds are fixed, so a build passes or fails every time. The
// planted bugs exceed their critical values by orders of magnitude.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/sampling.h"
#include "kernels/philox.h"
#include "tests/support/statistics.h"

namespace tandem::cpu {
namespace {

using namespace test_stats;
constexpr double kAlpha = 1e-4;  // false-alarm rate of each statistical check

using Sampler = std::function<int32_t(const float* p, int V, uint64_t seed, int64_t position)>;

int32_t real_sampler(const float* p, int V, uint64_t seed, int64_t position) {
  return gumbel_row(p, V, seed, position);
}

// Test-local races with planted bugs: the contract's argmin of E/p with the
// noise keyed wrongly. `noise_position` maps the true position to the one
// whose clocks are read.
int32_t race_at(const float* p, int V, uint64_t seed, int64_t noise_position) {
  int32_t best = -1;
  double best_ratio = 0.0;
  for (int v = 0; v < V; ++v) {
    if (!(p[v] > 0.0f)) continue;
    const double ratio = philox_exponential(seed, noise_position, v) / p[v];
    if (best < 0 || ratio < best_ratio) best = v, best_ratio = ratio;
  }
  return best;
}
int32_t bug_ignores_position(const float* p, int V, uint64_t seed, int64_t) {
  return race_at(p, V, seed, 0);  // one set of clocks for every position
}
int32_t bug_shares_neighbours(const float* p, int V, uint64_t seed, int64_t position) {
  return race_at(p, V, seed, position / 2);  // positions 2k and 2k+1 share clocks
}

std::vector<double> normalized(const std::vector<float>& w) {
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<double> p;
  for (float x : w) p.push_back(x / total);
  return p;
}

// ---- 1. the marginal ---------------------------------------------------------------

// 16 tokens, unnormalized weights (the race does not need a sum of 1), one of
// them 0 (it must never be drawn: an exact check inside chi_square_fit).
const std::vector<float> kRow = {20.0f, 15.0f, 12.0f, 10.0f, 8.0f, 7.0f, 6.0f, 5.0f,
                                 4.0f,  3.5f,  2.5f,  2.0f,  1.5f, 1.0f, 0.5f, 0.0f};
constexpr int kSeeds = 4, kPositions = 10000;  // 40,000 draws at distinct (seed, position)

Fit marginal_fit(const Sampler& sample) {
  const int V = static_cast<int>(kRow.size());
  std::vector<long> counts(V, 0);
  for (int s = 0; s < kSeeds; ++s) {
    const uint64_t seed = 0x9e3779b97f4a7c15ull * (s + 1);
    for (int64_t position = 0; position < kPositions; ++position) {
      ++counts[sample(kRow.data(), V, seed, 1000 + position)];
    }
  }
  return chi_square_fit(counts, normalized(kRow), kAlpha);
}

TEST(GumbelStatistics, MarginalIsP) {
  const Fit fit = marginal_fit(real_sampler);
  std::printf("marginal: chi2 %.2f, dof %d, critical %.2f at alpha 1e-4\n", fit.statistic,
              fit.dof, fit.critical);
  EXPECT_EQ(fit.dof, 14);  // 15 positive cells, none pooled (the smallest expects 816)
  EXPECT_LT(fit.statistic, fit.critical);
}

TEST(GumbelStatistics, MarginalCatchesNoiseReusedAcrossPositions) {
  const Fit fit = marginal_fit(bug_ignores_position);
  std::printf("planted bug (position ignored): chi2 %.0f, critical %.2f\n", fit.statistic,
              fit.critical);
  EXPECT_GT(fit.statistic, fit.critical);
}

// ---- 2. independence across positions ----------------------------------------------

// Pairs (x_2k, x_2k+1) of a 4-token row against p ⊗ p: 16 cells.
Fit pair_fit(const Sampler& sample) {
  const std::vector<float> row = {0.4f, 0.3f, 0.2f, 0.1f};
  const std::vector<double> p = normalized(row);
  std::vector<double> joint;
  for (double a : p)
    for (double b : p) joint.push_back(a * b);
  std::vector<long> counts(16, 0);
  for (int64_t k = 0; k < 20000; ++k) {
    const int32_t a = sample(row.data(), 4, 77, 2 * k), b = sample(row.data(), 4, 77, 2 * k + 1);
    ++counts[a * 4 + b];
  }
  return chi_square_fit(counts, joint, kAlpha);
}

TEST(GumbelStatistics, NeighbouringPositionsAreIndependent) {
  const Fit fit = pair_fit(real_sampler);
  std::printf("pairs: chi2 %.2f, dof %d, critical %.2f\n", fit.statistic, fit.dof, fit.critical);
  EXPECT_LT(fit.statistic, fit.critical);
  const Fit bug = pair_fit(bug_shares_neighbours);
  std::printf("planted bug (neighbours share noise): chi2 %.0f\n", bug.statistic);
  EXPECT_GT(bug.statistic, bug.critical);
  // The marginal alone cannot see that bug: each position's draw is still p.
  // Its counts are twice those of 20,000 independent draws, so its statistic
  // is twice a chi-square: half of it is held to the same critical value.
  const Fit doubled = marginal_fit(bug_shares_neighbours);
  EXPECT_LT(doubled.statistic / 2, doubled.critical);
}

// ---- 3. the coupling's acceptance ------------------------------------------------------

double total_variation(const std::vector<double>& p, const std::vector<double>& q) {
  double sum = 0.0;
  for (size_t v = 0; v < p.size(); ++v) sum += std::fabs(p[v] - q[v]);
  return 0.5 * sum;
}

// P(the race over p and the race over q, with the same clocks, pick the same
// token): both pick v iff E_u > E_v max(p_u/p_v, q_u/q_v) for every u, so
// conditioning on E_v and integrating, P(v) = 1 / Σ_u max(p_u/p_v, q_u/q_v).
double exact_match_rate(const std::vector<double>& p, const std::vector<double>& q) {
  double rate = 0.0;
  for (size_t v = 0; v < p.size(); ++v) {
    if (!(p[v] > 0.0 && q[v] > 0.0)) continue;
    double sum = 0.0;
    for (size_t u = 0; u < p.size(); ++u) sum += std::max(p[u] / p[v], q[u] / q[v]);
    rate += 1.0 / sum;
  }
  return rate;
}

struct CouplingCase {
  const char* name;
  std::vector<float> p, q;
};

std::vector<CouplingCase> coupling_cases() {
  std::vector<CouplingCase> cases = {
      {"near-equal", {0.3f, 0.3f, 0.2f, 0.2f}, {0.31f, 0.29f, 0.2f, 0.2f}},
      {"identical", {0.5f, 0.25f, 0.125f, 0.125f}, {0.5f, 0.25f, 0.125f, 0.125f}},
      {"disjoint-ish",
       {0.45f, 0.45f, 0.05f, 0.05f, 0.0f, 0.0f},
       {0.05f, 0.0f, 0.05f, 0.0f, 0.45f, 0.45f}},
      {"disjoint", {0.5f, 0.5f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.5f, 0.5f}},
      {"uniform vs peaked", std::vector<float>(8, 0.125f),
       {0.79f, 0.03f, 0.03f, 0.03f, 0.03f, 0.03f, 0.03f, 0.03f}},
      {"peaked apart",
       {0.86f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f},
       {0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.02f, 0.86f}},
  };
  std::mt19937 rng(12u);  // Dirichlet(1) pairs over 6 tokens
  std::exponential_distribution<float> weight(1.0f);
  for (int i = 0; i < 3; ++i) {
    CouplingCase c{"random", {}, {}};
    for (int v = 0; v < 6; ++v) c.p.push_back(weight(rng)), c.q.push_back(weight(rng));
    cases.push_back(c);
  }
  return cases;
}

TEST(GumbelStatistics, CouplingAcceptsAtLeastTheBound) {
  constexpr long kDraws = 20000;
  const double z_one_sided = normal_upper_quantile(kAlpha);
  const double z_two_sided = normal_upper_quantile(kAlpha / 2);
  for (const CouplingCase& c : coupling_cases()) {
    const int V = static_cast<int>(c.p.size());
    const std::vector<double> p = normalized(c.p), q = normalized(c.q);
    const double tv = total_variation(p, q);
    const double bound = (1.0 - tv) / (1.0 + tv);
    const double exact = exact_match_rate(p, q);
    long matches = 0;
    for (long position = 0; position < kDraws; ++position) {
      const uint64_t seed = 31;
      matches += gumbel_row(c.q.data(), V, seed, position) ==
                 gumbel_row(c.p.data(), V, seed, position);
    }
    const double measured = static_cast<double>(matches) / kDraws;
    std::printf("%-18s TV %.4f: coupling measured %.4f, exact %.4f, bound (1-TV)/(1+TV) %.4f; "
                "rejection 1-TV %.4f\n",
                c.name, tv, measured, exact, bound, 1.0 - tv);
    // The theorem, on the exact rate (rounding only).
    EXPECT_GE(exact, bound - 1e-12) << c.name;
    // Measured against the bound: one-sided, so a rate at or above it fails
    // with probability <= 1e-4.
    EXPECT_GE(binomial_z(matches, kDraws, bound), -z_one_sided) << c.name;
    // And against the race's exact rate, both ways (stronger: a wrong race
    // that happened to clear the bound fails here).
    EXPECT_LE(std::fabs(binomial_z(matches, kDraws, exact)), z_two_sided) << c.name;
  }
}

}  // namespace
}  // namespace tandem::cpu
