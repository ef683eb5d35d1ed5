// Variants measured in rounds: --variants run side by side at each load
// point, --rounds times, and each variant's output throughput set against
// the first variant's, round by round.
//
// A shared host drifts: in a run of one variant after the other, the second
// meets other weather than the first. So the order alternates from round to
// round (A B, then B A, then A B: what the host does between the two halves
// of a round falls on each variant equally often), and each round gives a
// ratio of two runs made minutes apart at most. The ratios' geometric mean
// comes with a 95% interval from Student's t over their logarithms, which
// says how far apart the variants are and whether the rounds could tell.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace tandem::loadtest {

// The order in which round `round` (0-based) runs `variants` variants:
// 0, 1, ..., n-1 in even rounds, n-1, ..., 0 in odd ones.
std::vector<size_t> round_order(size_t variants, size_t round);

// t such that P(|T| <= t) = 0.95 for Student's t with `dof` (>= 1) degrees
// of freedom: a table to 30, then the Cornish-Fisher expansion about the
// normal quantile (within 0.001 of the exact value there).
double student_t_95(size_t dof);

struct RatioSummary {
  double geometric_mean = 0;
  // exp(mean ± t · sd / sqrt(n)) of the logarithms; none from one ratio.
  std::optional<double> low, high;
};

// The summary of ratios (each > 0 and finite); throws
// Error(invalid_argument) for none or any other value.
RatioSummary summarize_ratios(std::span<const double> ratios);

}  // namespace tandem::loadtest
