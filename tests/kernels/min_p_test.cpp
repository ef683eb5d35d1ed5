// min_p in the CPU standardization (kernels/cpu/sampling.h, step 6): after
// temperature, top-k and top-p, tokens below min_p times the most likely
// one's probability get exactly 0 and the rest are renormalized; 0 is off.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"

namespace tandem::cpu {
namespace {

std::vector<float> min_p_standardized(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<float> probs(logits.size());
  standardize_row(logits.data(), static_cast<int>(logits.size()), p, probs.data());
  return probs;
}

TEST(MinP, KeepsTokensAtLeastMinPTimesTheMostLikely) {
  // Softmax of log(8), log(4), log(2), log(1): 8/15, 4/15, 2/15, 1/15.
  const std::vector<float> logits = {std::log(2.0f), std::log(8.0f), std::log(1.0f), std::log(4.0f)};
  SamplingParams p;
  p.min_p = 0.25f;  // keeps p >= 2/15: tokens 1, 3, 0
  const std::vector<float> probs = min_p_standardized(logits, p);
  EXPECT_NEAR(probs[1], 8.0 / 14, 1e-6);
  EXPECT_NEAR(probs[3], 4.0 / 14, 1e-6);
  EXPECT_NEAR(probs[0], 2.0 / 14, 1e-6);
  EXPECT_EQ(probs[2], 0.0f);
  p.min_p = 0.0f;  // off: all four
  EXPECT_NEAR(min_p_standardized(logits, p)[2], 1.0 / 15, 1e-6);
  p.min_p = 1.0f;  // only the most likely
  EXPECT_EQ(min_p_standardized(logits, p), (std::vector<float>{0, 1, 0, 0}));
}

TEST(MinP, ComesAfterTemperatureAndTopP) {
  const std::vector<float> logits = {std::log(2.0f), std::log(8.0f), std::log(1.0f), std::log(4.0f)};
  SamplingParams p;
  p.temperature = 0.5f;  // squares the odds: 64, 16, 4, 1 (of 85)
  p.min_p = 0.05f;       // keeps >= 3.2/85: all but the 1
  std::vector<float> probs = min_p_standardized(logits, p);
  EXPECT_NEAR(probs[0], 4.0 / 84, 1e-6);
  EXPECT_EQ(probs[2], 0.0f);
  p.temperature = 1.0f;
  p.top_p = 0.7f;  // keeps 8/15 and 4/15 (mass 0.8), then min_p 0.6 of 8/12
  p.min_p = 0.6f;
  probs = min_p_standardized(logits, p);
  EXPECT_EQ(probs, (std::vector<float>{0, 1, 0, 0}));
  EXPECT_NEAR(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0, 1e-6);
}

TEST(MinP, OutOfRangeIsRefusedNamingIt) {
  SamplingParams p;
  for (float bad : {-0.01f, 1.01f, std::nanf("")}) {
    p.min_p = bad;
    const auto problem = find_sampling_problem(p);
    ASSERT_TRUE(problem) << bad;
    EXPECT_EQ(problem->field, "min_p");
    std::vector<float> probs(4);
    const std::vector<float> logits(4, 0.0f);
    EXPECT_THROW(standardize_row(logits.data(), 4, p, probs.data()), Error);
  }
}

}  // namespace
}  // namespace tandem::cpu
