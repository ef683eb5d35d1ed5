#include "tools/loadtest/variant_rounds.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.h"

namespace tandem::loadtest {

std::vector<size_t> round_order(size_t variants, size_t round) {
  std::vector<size_t> order(variants);
  std::iota(order.begin(), order.end(), size_t{0});
  if (round % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

double student_t_95(size_t dof) {
  require(dof >= 1, ErrorKind::invalid_argument, "Student's t needs at least 1 degree of freedom");
  // Two-sided 95% (the 0.975 quantile) for 1..30 degrees of freedom.
  static constexpr std::array<double, 30> kTable = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof <= kTable.size()) return kTable[dof - 1];
  const double z = 1.959963984540054;  // the normal distribution's 0.975 quantile
  const double n = static_cast<double>(dof);
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

RatioSummary summarize_ratios(std::span<const double> ratios) {
  require(!ratios.empty(), ErrorKind::invalid_argument, "no ratios to summarize");
  std::vector<double> logs;
  for (double r : ratios) {
    require(std::isfinite(r) && r > 0, ErrorKind::invalid_argument,
            "a throughput ratio must be positive and finite, got " + std::to_string(r));
    logs.push_back(std::log(r));
  }
  const double n = static_cast<double>(logs.size());
  const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / n;
  RatioSummary summary;
  summary.geometric_mean = std::exp(mean);
  if (logs.size() < 2) return summary;
  double squares = 0;
  for (double l : logs) squares += (l - mean) * (l - mean);
  const double half_width = student_t_95(logs.size() - 1) * std::sqrt(squares / (n - 1) / n);
  summary.low = std::exp(mean - half_width);
  summary.high = std::exp(mean + half_width);
  return summary;
}

}  // namespace tandem::loadtest
