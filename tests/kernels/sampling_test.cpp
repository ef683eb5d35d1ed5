// Tests of kernels/cpu/sampling.h: standardization (paper §2.2) checked
// against an independent double-precision reference, argmax, inverse-CDF
// sampling checked structurally (one-hot rows) and statistically (chi-square
// at a stated false-alarm rate), and argument checks.
//
// V is the vocabulary size throughout.
#include "kernels/cpu/sampling.h"
#include "tests/support/expect_error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <random>
#include <vector>

#include "common/error.h"
#include "kernels/philox.h"
#include "tests/support/test_inputs.h"

namespace tandem::cpu {
namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();

using test_support::sampling_params;

std::vector<float> random_logits(int V, uint32_t seed, float scale = 3.0f) {
  return test_support::random_normal(static_cast<size_t>(V), seed, scale);
}

std::vector<float> standardized(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<float> probs(logits.size(), -1.0f);
  standardize_row(logits.data(), static_cast<int>(logits.size()), p, probs.data());
  return probs;
}

// The obviously-correct version, in double: stable-sort by logit (ties keep
// the lower index first), cut to k, softmax of logit/T over the kept tokens,
// cut to the shortest prefix reaching top_p, renormalize.
std::vector<double> reference(const std::vector<float>& logits, double T, int k, double top_p) {
  const int V = static_cast<int>(logits.size());
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const int kept = (k > 0 && k < V) ? k : V;
  const double max_logit = logits[order[0]];
  std::vector<double> weight(V, 0.0);
  double total = 0.0;
  for (int j = 0; j < kept; ++j) {
    weight[order[j]] = std::exp((logits[order[j]] - max_logit) / T);
    total += weight[order[j]];
  }
  double cum = 0.0;
  int keep = kept;
  for (int j = 0; j < kept && top_p < 1.0; ++j) {
    cum += weight[order[j]];
    if (cum >= top_p * total) {
      keep = j + 1;
      break;
    }
  }
  double kept_mass = 0.0;
  for (int j = 0; j < keep; ++j) kept_mass += weight[order[j]];
  std::vector<double> probs(V, 0.0);
  for (int j = 0; j < keep; ++j) probs[order[j]] = weight[order[j]] / kept_mass;
  return probs;
}

double row_sum(const std::vector<float>& probs) {
  double sum = 0.0;
  for (float x : probs) sum += x;
  return sum;
}

std::vector<int> kept_tokens(const std::vector<float>& probs) {
  std::vector<int> kept;
  for (int i = 0; i < static_cast<int>(probs.size()); ++i) {
    if (probs[i] != 0.0f) kept.push_back(i);
  }
  return kept;
}

// Same support exactly, values within float rounding of the reference.
void expect_matches_reference(const std::vector<float>& probs, const std::vector<double>& ref) {
  ASSERT_EQ(probs.size(), ref.size());
  for (size_t i = 0; i < probs.size(); ++i) {
    if (ref[i] == 0.0) {
      EXPECT_EQ(probs[i], 0.0f) << "token " << i << " should have been removed";
    } else {
      EXPECT_NEAR(probs[i], ref[i], 1e-9 + 2e-6 * ref[i]) << "token " << i;
    }
  }
}

// ---- standardize -----------------------------------------------------------

TEST(Standardize, RowsSumToOneForEverySetting) {
  const std::vector<float> logits = random_logits(1000, 1);
  for (float T : {0.3f, 1.0f, 1.7f}) {
    for (int k : {0, 1, 10, 999, 1000, 5000}) {
      for (float top_p : {1.0f, 0.95f, 0.5f, 0.01f}) {
        const std::vector<float> probs = standardized(logits, sampling_params(T, k, top_p));
        EXPECT_NEAR(row_sum(probs), 1.0, 1e-6) << "T " << T << " k " << k << " p " << top_p;
        for (float x : probs) ASSERT_TRUE(x >= 0.0f && x <= 1.0f);
      }
    }
  }
}

TEST(Standardize, TemperatureOneIsSoftmax) {
  const std::vector<float> logits = random_logits(4096, 2, 5.0f);
  expect_matches_reference(standardized(logits, sampling_params(1.0f)), reference(logits, 1, 0, 1));
}

TEST(Standardize, TemperatureDividesLogits) {
  const std::vector<float> logits = random_logits(512, 3);
  for (float T : {0.25f, 0.5f, 2.0f, 10.0f}) {
    SCOPED_TRACE(T);
    expect_matches_reference(standardized(logits, sampling_params(T)), reference(logits, T, 0, 1));
  }
  // Lower temperature sharpens: the top token gains mass monotonically.
  const int top = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  float previous = 0.0f;
  for (float T : {4.0f, 1.0f, 0.5f, 0.1f, 0.01f}) {
    const float p_top = standardized(logits, sampling_params(T))[top];
    EXPECT_GT(p_top, previous) << "T " << T;
    previous = p_top;
  }
}

TEST(Standardize, TopKKeepsExactlyTheKLargest) {
  const std::vector<float> logits = random_logits(300, 4);
  for (int k : {1, 2, 7, 150, 299}) {
    SCOPED_TRACE(k);
    const std::vector<float> probs = standardized(logits, sampling_params(0.8f, k));
    EXPECT_EQ(static_cast<int>(kept_tokens(probs).size()), k);
    expect_matches_reference(probs, reference(logits, 0.8, k, 1));
  }
  // Kept logits 1000 apart: exp overflows unless the kept max is subtracted.
  const std::vector<float> spread = random_logits(5000, 40, 300.0f);
  for (int k : {3, 50, 4000}) {
    SCOPED_TRACE(k);
    expect_matches_reference(standardized(spread, sampling_params(0.5f, k)),
                             reference(spread, 0.5, k, 1));
  }
}

TEST(Standardize, TopKTiesKeepLowerIndices) {
  //                               0     1     2     3     4     5
  const std::vector<float> logits{1.0f, 3.0f, 3.0f, 3.0f, 2.0f, 3.0f};
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 2))), (std::vector<int>{1, 2}));
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 3))), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 5))),
            (std::vector<int>{1, 2, 3, 4, 5}));
  const std::vector<float> probs = standardized(logits, sampling_params(1.0f, 2));
  EXPECT_EQ(probs[1], 0.5f);
  EXPECT_EQ(probs[2], 0.5f);
  // -0 and +0 are the same logit: a tie, so the lower index stays.
  const std::vector<float> zeros{-1.0f, -0.0f, 0.0f};
  EXPECT_EQ(kept_tokens(standardized(zeros, sampling_params(1.0f, 1))), (std::vector<int>{1}));
}

TEST(Standardize, TopPBoundaryExactUnderAndOver) {
  // Eight equal logits: every weight is exactly 1 and every prefix mass j/8
  // is exact in binary, so the boundary cases are exact, not approximate.
  const std::vector<float> equal(8, 0.5f);
  auto kept_count = [&](float top_p) {
    return kept_tokens(standardized(equal, sampling_params(1.0f, 0, top_p))).size();
  };
  EXPECT_EQ(kept_count(0.25f), 2u);                        // exactly 2/8
  EXPECT_EQ(kept_count(std::nextafter(0.25f, 0.0f)), 2u);  // just under
  EXPECT_EQ(kept_count(std::nextafter(0.25f, 1.0f)), 3u);  // just over
  EXPECT_EQ(kept_count(0.375f), 3u);
  EXPECT_EQ(kept_count(std::nextafter(1.0f, 0.0f)), 8u);
  EXPECT_EQ(kept_tokens(standardized(equal, sampling_params(1.0f, 0, 0.25f))),
            (std::vector<int>{0, 1}));  // ties: the lower indices

  // Distinct probabilities 0.4, 0.3, 0.2, 0.1 (shuffled): cumulative 0.4,
  // 0.7, 0.9, 1. Just under and just over each boundary.
  const std::vector<float> logits{std::log(0.2f), std::log(0.4f), std::log(0.1f), std::log(0.3f)};
  struct Case {
    float top_p;
    std::vector<int> kept;
  };
  const Case cases[] = {{0.3999f, {1}},       {0.4001f, {1, 3}},    {0.6999f, {1, 3}},
                        {0.7001f, {0, 1, 3}}, {0.8999f, {0, 1, 3}}, {0.9001f, {0, 1, 2, 3}},
                        {1e-6f, {1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.top_p);
    const std::vector<float> probs = standardized(logits, sampling_params(1.0f, 0, c.top_p));
    EXPECT_EQ(kept_tokens(probs), c.kept);
    expect_matches_reference(probs, reference(logits, 1, 0, c.top_p));
  }
}

TEST(Standardize, TopPTiesKeepLowerIndices) {
  // Three tied tokens (1, 2, 3) each hold e^2/(3e^2+e+1) = 0.2956 of the
  // mass; reaching 0.45 needs two of them: the two lower indices.
  const std::vector<float> logits{1.0f, 2.0f, 2.0f, 2.0f, 0.0f};
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 0, 0.45f))),
            (std::vector<int>{1, 2}));
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 0, 0.2f))), (std::vector<int>{1}));
}

TEST(Standardize, TopKThenTopPMatchesReference) {
  for (uint32_t seed = 10; seed < 30; ++seed) {
    const std::vector<float> logits = random_logits(257, seed);
    for (int k : {0, 5, 40}) {
      for (float top_p : {0.3f, 0.8f, 0.99f}) {
        for (float T : {0.5f, 1.0f, 1.5f}) {
          SCOPED_TRACE(::testing::Message()
                       << "seed " << seed << " k " << k << " p " << top_p << " T " << T);
          expect_matches_reference(standardized(logits, sampling_params(T, k, top_p)),
                                   reference(logits, T, k, top_p));
        }
      }
    }
  }
  // Top-p acts on the mass left after top-k: with k = 2 and p = 0.5 the
  // larger of two kept tokens suffices when it holds half of their mass.
  const std::vector<float> logits{0.0f, 5.0f, 4.0f, 4.5f};
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 2, 0.5f))), (std::vector<int>{1}));
  EXPECT_EQ(kept_tokens(standardized(logits, sampling_params(1.0f, 2, 0.7f))),
            (std::vector<int>{1, 3}));
}

TEST(Standardize, GreedyIsOneHotAtTheArgmax) {
  const std::vector<float> logits = random_logits(1000, 5);
  const int best =
      static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  for (const SamplingParams& p : {sampling_params(0.0f), sampling_params(0.0f, 3, 0.2f)}) {
    const std::vector<float> probs = standardized(logits, p);
    EXPECT_EQ(kept_tokens(probs), (std::vector<int>{best}));
    EXPECT_EQ(probs[best], 1.0f);
  }
  // Ties: the lowest index, as argmax().
  const std::vector<float> tied{0.0f, 7.0f, 3.0f, 7.0f};
  EXPECT_EQ(kept_tokens(standardized(tied, sampling_params(0.0f))), (std::vector<int>{1}));
}

TEST(Standardize, ExtremeLogitsNeverGiveNaN) {
  const float big = std::numeric_limits<float>::max();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    std::vector<float> logits;
    std::vector<float> expected;  // empty: only check finiteness and the sum
  };
  const Case cases[] = {
      {{big, -big, 0.0f, -kInfinity, 1e30f}, {1, 0, 0, 0, 0}},
      {{-big, -big, -1e30f}, {0, 0, 1}},
      {{kInfinity, 0.0f, kInfinity, -kInfinity}, {0.5f, 0, 0.5f, 0}},               // +inf share the mass
      {{-kInfinity, -kInfinity, -kInfinity, -kInfinity}, {0.25f, 0.25f, 0.25f, 0.25f}},  // all equal
      {{nan, 1.0f, nan, 1.0f}, {0, 0.5f, 0, 0.5f}},                  // NaN counts as -inf
      {{nan, nan}, {0.5f, 0.5f}},
      {{1e-30f, -1e-30f, 3e-38f, 0.0f}, {}},
  };
  for (const Case& c : cases) {
    for (const SamplingParams& p :
         {sampling_params(1.0f), sampling_params(1e-30f), sampling_params(1e30f), sampling_params(0.5f, 2, 0.9f),
          sampling_params(std::numeric_limits<float>::denorm_min())}) {
      const std::vector<float> probs = standardized(c.logits, p);
      for (float x : probs) ASSERT_TRUE(std::isfinite(x) && x >= 0.0f);
      EXPECT_NEAR(row_sum(probs), 1.0, 1e-6);
      if (!c.expected.empty() && p.top_k == 0 && p.temperature == 1.0f) {
        EXPECT_EQ(probs, c.expected);
      }
    }
  }
}

TEST(Standardize, WorksInPlace) {
  const std::vector<float> logits = random_logits(777, 6);
  for (const SamplingParams& p : {sampling_params(1.0f), sampling_params(0.0f), sampling_params(0.7f, 50, 0.9f),
                                  sampling_params(1.2f, 0, 0.6f)}) {
    std::vector<float> in_place = logits;
    standardize_row(in_place.data(), 777, p, in_place.data());
    EXPECT_EQ(in_place, standardized(logits, p));
  }
}

TEST(Standardize, BatchUsesEachRowsParamsOrOneForAll) {
  const int rows = 5, V = 333;
  const std::vector<float> logits = random_logits(rows * V, 7);
  const std::vector<SamplingParams> params{sampling_params(1.0f), sampling_params(0.0f),
                                           sampling_params(0.5f, 10), sampling_params(1.0f, 0, 0.5f),
                                           sampling_params(2.0f, 100, 0.9f)};
  auto row = [&](int r) {
    return std::vector<float>(logits.begin() + r * V, logits.begin() + (r + 1) * V);
  };

  std::vector<float> probs(rows * V);
  standardize(logits.data(), rows, V, params, probs.data());
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(std::vector<float>(probs.begin() + r * V, probs.begin() + (r + 1) * V),
              standardized(row(r), params[r]))
        << "row " << r;
  }
  const SamplingParams shared = sampling_params(0.9f, 20, 0.8f);
  standardize(logits.data(), rows, V, std::span(&shared, 1), probs.data());
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(std::vector<float>(probs.begin() + r * V, probs.begin() + (r + 1) * V),
              standardized(row(r), shared))
        << "row " << r;
  }
}

// ---- argmax ----------------------------------------------------------------

TEST(Argmax, EachRowLowestIndexOnTies) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits{
      0.0f,  2.0f,  1.0f,  2.0f,   // tie: 1
      -kInfinity, -kInfinity, -5.0f, -kInfinity,  // 2
      nan,   -1.0f, nan,   -2.0f,  // NaN never wins: 1
      nan,   nan,   nan,   nan,    // all NaN: 0
      kInfinity,  3.0f,  kInfinity,  0.0f,   // 0
      -kInfinity, nan,   -kInfinity, -kInfinity,  // NaN ranks as -inf: all tie, 0
  };
  std::vector<int32_t> out(6, -1);
  argmax(logits.data(), 6, 4, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2, 1, 0, 0, 0}));
  // Greedy standardization agrees with argmax on every row.
  for (int r = 0; r < 6; ++r) {
    const std::vector<float> row(logits.begin() + 4 * r, logits.begin() + 4 * r + 4);
    EXPECT_EQ(kept_tokens(standardized(row, sampling_params(0.0f))), std::vector<int>{out[r]});
    EXPECT_EQ(kept_tokens(standardized(row, sampling_params(1.0f, 1)))[0], out[r]) << "row " << r;
  }
}

TEST(NonFiniteRows, FlagsEveryRowWithANanOrAnInfinityAndNoOther) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  const std::vector<float> logits{
      0.0f, 2.0f,  1.0f, -3.0f,  // finite
      nan,  1.0f,  1.0f, 1.0f,   // NaN first
      1.0f, 1.0f,  1.0f, kInfinity,   // +inf last
      1.0f, -kInfinity, 1.0f, 1.0f,   // -inf
      big,  -big,  0.0f, 1e-45f, // extremes, all finite
  };
  std::vector<uint8_t> out(5, 7);
  find_nonfinite_rows(logits.data(), 5, 4, out.data());
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 1, 1, 1, 0}));
  test_support::expect_invalid([&] { find_nonfinite_rows(logits.data(), 1, 0, out.data()); }, "V");
}

TEST(SamplingParamsCheck, NamesTheFieldOfTheFirstValueTheOpsRefuse) {
  EXPECT_FALSE(find_sampling_problem(sampling_params(0.0f)));
  EXPECT_FALSE(find_sampling_problem(sampling_params(2.0f, 5, 1e-45f)));
  const std::vector<std::pair<SamplingParams, std::string>> bad = {
      {sampling_params(-1.0f), "temperature"},
      {sampling_params(std::numeric_limits<float>::quiet_NaN()), "temperature"},
      {sampling_params(1.0f, -1), "top_k"},
      {sampling_params(1.0f, 0, 0.0f), "top_p"},
      {sampling_params(1.0f, 0, std::numeric_limits<float>::quiet_NaN()), "top_p"},
      {sampling_params(1.0f, 0, 1.5f), "top_p"},
  };
  for (const auto& [p, field] : bad) {
    const std::optional<SamplingProblem> problem = find_sampling_problem(p);
    ASSERT_TRUE(problem) << field;
    EXPECT_EQ(problem->field, field);
    EXPECT_EQ(problem->message.rfind(field + " must be", 0), 0u) << problem->message;
  }
}

// ---- sample_row --------------------------------------------------------------

TEST(SampleRow, OneHotRowsGiveTheirTokenForAnyU) {
  const int V = 64;
  std::vector<double> us{0.0, 1e-300, 0.5, 1.0 - 0x1.0p-53};
  for (int i = 0; i < 100; ++i) us.push_back(philox_uniform(9, i, RandomPurpose::target_sample));
  for (int hot : {0, 1, 31, V - 1}) {
    std::vector<float> row(V, 0.0f);
    row[hot] = 1.0f;
    for (double u : us) ASSERT_EQ(sample_row(row.data(), V, u), hot) << "u " << u;
    row[hot] = 3e-38f;  // unnormalized, tiny: still the only token with mass
    for (double u : us) ASSERT_EQ(sample_row(row.data(), V, u), hot) << "u " << u;
  }
}

TEST(SampleRow, InverseCdfInIndexOrderSkippingZeros) {
  // Unnormalized row (total 10): token 0 owns u in [0, 0.2), token 2 the rest.
  const std::vector<float> row{2.0f, 0.0f, 8.0f, 0.0f};
  EXPECT_EQ(sample_row(row.data(), 4, 0.0), 0);
  EXPECT_EQ(sample_row(row.data(), 4, 0.1999), 0);
  EXPECT_EQ(sample_row(row.data(), 4, 0.2), 2);  // cumsum 2 is not > 0.2 * 10
  EXPECT_EQ(sample_row(row.data(), 4, 1.0 - 0x1.0p-53), 2);
  // Rounding at u -> 1 must not walk past the last token with mass into the
  // zeros after it; negative and NaN entries count as zero.
  const std::vector<float> tail{0.0f, 0.1f,  0.2f,
                                0.0f, -0.5f, std::numeric_limits<float>::quiet_NaN()};
  for (double u : {1.0 - 0x1.0p-53, 1.0 - 0x1.0p-52, 0.99999999})
    EXPECT_EQ(sample_row(tail.data(), 6, u), 2) << "u " << u;
  EXPECT_EQ(sample_row(tail.data(), 6, 0.0), 1);
}

// Counts of `draws` tokens drawn with Philox uniforms at consecutive positions.
std::vector<int> sample_counts(const std::vector<float>& probs, int draws, uint64_t seed) {
  std::vector<int> counts(probs.size(), 0);
  for (int i = 0; i < draws; ++i) {
    const double u = philox_uniform(seed, i, RandomPurpose::target_sample);
    ++counts[sample_row(probs.data(), static_cast<int>(probs.size()), u)];
  }
  return counts;
}

double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int draws) {
  double statistic = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = p[i] * draws;
    statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return statistic;
}

// Chi-square goodness of fit over 50 tokens (49 degrees of freedom) at
// false-alarm rate 1e-6: the critical value is the 1 - 1e-6 quantile of
// chi2(49) = 111.14, found by bisection on the regularized upper incomplete
// gamma Q(49/2, x/2) = 1e-6. Every expected count is >= 0.004 * 200k = 800,
// far above the usual >= 5 rule, so the chi2 approximation holds.
constexpr double kCritical49 = 111.14;

class SampleRowStatistics : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(2023);
    std::uniform_real_distribution<double> weight(0.2, 1.5);
    double total = 0.0;
    for (double& x : p_) total += (x = weight(rng));
    for (double& x : p_) x /= total;
  }
  static constexpr int kDraws = 200000;
  std::vector<double> p_ = std::vector<double>(50);
};

TEST_F(SampleRowStatistics, FrequenciesMatchProbabilities) {
  const std::vector<float> probs(p_.begin(), p_.end());
  // Several seeds: each passes at the 1e-6 rate, so a failure is a bug.
  for (uint64_t seed : {1ull, 77ull, 0xdeadbeefcafeull}) {
    EXPECT_LT(chi_square(sample_counts(probs, kDraws, seed), p_, kDraws), kCritical49)
        << "seed " << seed;
  }
}

TEST_F(SampleRowStatistics, DetectsASlightlyWrongDistribution) {
  // A sampler whose every probability is off by 4% (alternately high and
  // low, renormalized). Noncentrality 200k * sum_i p_i * 0.04^2 ~ 320, so the
  // statistic should land near 49 + 320 = 369 (sd ~ 36), about 7 sd above the
  // critical value: the test above has the power to catch a bias this small.
  std::vector<double> wrong = p_;
  double total = 0.0;
  for (size_t i = 0; i < wrong.size(); ++i) total += wrong[i] *= (i % 2 ? 0.96 : 1.04);
  for (double& x : wrong) x /= total;
  const std::vector<float> probs(wrong.begin(), wrong.end());
  for (uint64_t seed : {1ull, 77ull, 0xdeadbeefcafeull}) {
    const double statistic = chi_square(sample_counts(probs, kDraws, seed), p_, kDraws);
    EXPECT_GT(statistic, kCritical49) << "seed " << seed;
    EXPECT_GT(statistic, 200.0) << "seed " << seed;  // not a near miss either
  }
}

// ---- argument checks ---------------------------------------------------------

using test_support::expect_invalid;

TEST(SamplingArguments, BadParametersThrowNamingTheParameter) {
  const std::vector<float> logits{1.0f, 2.0f, 3.0f};
  std::vector<float> probs(3, -1.0f);
  auto row = [&](const SamplingParams& p) {
    return [&, p] { standardize_row(logits.data(), 3, p, probs.data()); };
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(row(sampling_params(-0.1f)), "temperature");
  expect_invalid(row(sampling_params(nan)), "temperature");
  expect_invalid(row(sampling_params(kInfinity)), "temperature");
  expect_invalid(row(sampling_params(1.0f, -1)), "top_k");
  expect_invalid(row(sampling_params(1.0f, 0, 0.0f)), "top_p");
  expect_invalid(row(sampling_params(1.0f, 0, 1.5f)), "top_p");
  expect_invalid(row(sampling_params(1.0f, 0, nan)), "top_p");
  expect_invalid(row(sampling_params(1.0f, 0, -0.5f)), "top_p");
  expect_invalid([&] { standardize_row(logits.data(), 0, sampling_params(1.0f), probs.data()); }, "V");
  EXPECT_EQ(probs, std::vector<float>(3, -1.0f));  // nothing was written

  // Batched: a wrong params count, or one bad row, changes nothing.
  const std::vector<SamplingParams> two{sampling_params(1.0f), sampling_params(1.0f)};
  expect_invalid([&] { standardize(logits.data(), 3, 1, two, probs.data()); }, "params");
  const std::vector<SamplingParams> one_bad{sampling_params(1.0f), sampling_params(1.0f, 0, 2.0f),
                                            sampling_params(1.0f)};
  expect_invalid([&] { standardize(logits.data(), 3, 1, one_bad, probs.data()); }, "top_p");
  expect_invalid([&] { standardize(logits.data(), -1, 3, two, probs.data()); }, "rows");
  EXPECT_EQ(probs, std::vector<float>(3, -1.0f));

  int32_t out = -1;
  expect_invalid([&] { argmax(logits.data(), 1, 0, &out); }, "V");

  expect_invalid([&] { sample_row(logits.data(), 3, 1.0); }, "u");
  expect_invalid([&] { sample_row(logits.data(), 3, -0.25); }, "u");
  expect_invalid([&] { sample_row(logits.data(), 3, std::nan("")); }, "u");
  expect_invalid([&] { sample_row(logits.data(), -3, 0.5); }, "V");
  const std::vector<float> zeros(3, 0.0f);
  expect_invalid([&] { sample_row(zeros.data(), 3, 0.5); }, "positive");
}

TEST(SamplingArguments, TopKAboveVocabularyIsOff) {
  const std::vector<float> logits = random_logits(10, 8);
  EXPECT_EQ(standardized(logits, sampling_params(1.0f, 11)), standardized(logits, sampling_params(1.0f)));
  EXPECT_EQ(standardized(logits, sampling_params(1.0f, 10)), standardized(logits, sampling_params(1.0f)));
}

}  // namespace
}  // namespace tandem::cpu
