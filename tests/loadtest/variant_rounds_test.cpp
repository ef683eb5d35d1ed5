// Tests of tools/loadtest/variant_rounds.h: the alternating order, Student's
// t against published values, and the interval's coverage measured by
// simulation (an independent check of the formula and the t it uses).
#include "tools/loadtest/variant_rounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

TEST(VariantRounds, OrderAlternatesFromRoundToRound) {
  EXPECT_EQ(round_order(3, 0), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(3, 1), (std::vector<size_t>{2, 1, 0}));
  EXPECT_EQ(round_order(3, 2), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(round_order(1, 1), (std::vector<size_t>{0}));
}

TEST(VariantRounds, StudentTMatchesPublishedQuantiles) {
  // Two-sided 95% points (the 0.975 quantile) from a printed t table.
  EXPECT_DOUBLE_EQ(student_t_95(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_95(4), 2.776);
  EXPECT_DOUBLE_EQ(student_t_95(30), 2.042);
  // Past the table, the expansion: within 0.001 of the printed values.
  EXPECT_NEAR(student_t_95(40), 2.021, 1e-3);
  EXPECT_NEAR(student_t_95(60), 2.000, 1e-3);
  EXPECT_NEAR(student_t_95(120), 1.980, 1e-3);
  EXPECT_NEAR(student_t_95(100000), 1.960, 1e-3);
  EXPECT_THROW(student_t_95(0), Error);
}

TEST(VariantRounds, OneRatioHasAMeanAndNoInterval) {
  const std::vector<double> one = {1.25};
  const RatioSummary s = summarize_ratios(one);
  EXPECT_DOUBLE_EQ(s.geometric_mean, 1.25);
  EXPECT_FALSE(s.low.has_value());
  EXPECT_FALSE(s.high.has_value());
}

TEST(VariantRounds, GeometricMeanAndAnIntervalSymmetricInTheLogarithm) {
  // 0.5 and 2: log-mean 0, so the geometric mean is 1 and the interval is
  // [1/x, x] for x = exp(12.706 · sd / sqrt(2)), sd = ln 2 · sqrt(2).
  const std::vector<double> ratios = {0.5, 2.0};
  const RatioSummary s = summarize_ratios(ratios);
  EXPECT_NEAR(s.geometric_mean, 1.0, 1e-12);
  const double x = std::exp(12.706 * std::log(2.0));
  ASSERT_TRUE(s.low && s.high);
  EXPECT_NEAR(*s.high, x, 1e-9 * x);
  EXPECT_NEAR(*s.low, 1 / x, 1e-12);
}

TEST(VariantRounds, TheIntervalCoversTheTrueRatioNineteenTimesInTwenty) {
  // Rounds whose ratios are log-normal about a true ratio of 1.1: the 95%
  // interval from 5 rounds must hold 1.1 in 95% of 4,000 trials. The
  // binomial's standard deviation there is 0.0034; the bounds are 4 of
  // them either side (a false alarm about once in 16,000 seeds). With the
  // normal's 1.96 in place of t(4) = 2.776 it covers about 88%.
  std::mt19937_64 rng(20261130);
  std::normal_distribution<double> noise(0.0, 0.08);
  const double truth = 1.1;
  int covered = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> ratios;
    for (int r = 0; r < 5; ++r) ratios.push_back(truth * std::exp(noise(rng)));
    const RatioSummary s = summarize_ratios(ratios);
    if (*s.low <= truth && truth <= *s.high) ++covered;
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.95 - 4 * 0.0034);
  EXPECT_LT(coverage, 0.95 + 4 * 0.0034);
}

TEST(VariantRounds, RefusesNoRatiosAndRatiosThatAreNotPositive) {
  EXPECT_THROW(summarize_ratios(std::vector<double>{}), Error);
  EXPECT_THROW(summarize_ratios(std::vector<double>{1.0, 0.0}), Error);
  EXPECT_THROW(summarize_ratios(std::vector<double>{1.0, -2.0}), Error);
  EXPECT_THROW(summarize_ratios(std::vector<double>{std::numeric_limits<double>::infinity()}),
               Error);
  EXPECT_THROW(summarize_ratios(std::vector<double>{std::nan("")}), Error);
}

}  // namespace
}  // namespace tandem::loadtest
