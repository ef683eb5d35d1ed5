// γ choice from Theorem 3.8, and the prompt-lookup drafter's matching.
#include "workers/speculation/gamma_policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "workers/speculation/ngram_drafter.h"

namespace tandem {
namespace {

TEST(GammaPolicy, ExpectedSpeedupIsTheoremThreeEight) {
  for (double alpha : {0.0, 0.3, 0.6, 0.8, 0.95}) {
    for (double c : {0.0, 0.05, 0.5}) {
      for (int gamma = 0; gamma <= 8; ++gamma) {
        const double closed_form =
            (1 - std::pow(alpha, gamma + 1)) / ((1 - alpha) * (gamma * c + 1));
        EXPECT_NEAR(expected_speedup(alpha, c, gamma), closed_form, 1e-12);
      }
    }
  }
  EXPECT_DOUBLE_EQ(expected_tokens_per_step(1.0, 4), 5.0);  // α = 1: every draft accepted
}

TEST(GammaPolicy, BestGammaIsTheArgmaxAndNeverSlowerThanPlain) {
  // A table in the spirit of the paper's Figure 3: (α, c) -> optimal γ.
  struct Row {
    double alpha, c;
  };
  for (const Row row : {Row{0.1, 0.5}, Row{0.5, 0.05}, Row{0.8, 0.05}, Row{0.9, 0.01},
                        Row{0.7, 0.2}, Row{0.3, 1.0}}) {
    const int chosen = best_gamma(row.alpha, row.c, 16);
    double best = 1.0;
    int argmax = 0;
    for (int g = 1; g <= 16; ++g) {
      if (expected_speedup(row.alpha, row.c, g) > best) {
        best = expected_speedup(row.alpha, row.c, g);
        argmax = g;
      }
    }
    EXPECT_EQ(chosen, argmax) << row.alpha << " " << row.c;
    EXPECT_GE(expected_speedup(row.alpha, row.c, chosen), 1.0);
  }
  EXPECT_EQ(best_gamma(0.0, 0.1, 8), 0);   // nothing is ever accepted
  EXPECT_EQ(best_gamma(0.5, 1.0, 8), 0);   // a draft as costly as the target
  EXPECT_EQ(best_gamma(0.99, 0.0, 8), 8);  // free drafts, nearly always right
}

TEST(GammaPolicy, AutomaticShrinksTowardThePriorWhileYoung) {
  GammaPolicy policy;
  policy.automatic = true;
  policy.gamma = 8;
  policy.prior_alpha = 0.6;
  EXPECT_EQ(policy.choose(0, 0, 0.05), best_gamma(0.6, 0.05, 8));
  EXPECT_EQ(policy.choose(95, 100, 0.05), best_gamma((95 + 2.4) / 104, 0.05, 8));
  EXPECT_EQ(policy.choose(0, 100, 0.05), 0);
  GammaPolicy fixed;
  fixed.gamma = 3;
  EXPECT_EQ(fixed.choose(0, 100, 0.9), 3);
}

TEST(NgramDrafter, ProposesWhatFollowedTheLongestMostRecentMatch) {
  NgramDrafter drafter(1, 3);
  // ... 5 6 7 [8 9] ... 5 6 7 [1 2] ... 6 7 -> the 3-gram "5 6 7" is not the
  // suffix; the suffix "6 7" last occurred before "1 2".
  const std::vector<int32_t> tokens{5, 6, 7, 8, 9, 4, 5, 6, 7, 1, 2, 3, 6, 7};
  EXPECT_EQ(drafter.lookup(tokens, 2), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(drafter.lookup(tokens, 5), (std::vector<int32_t>{1, 2, 3, 6, 7}));
  // The longest suffix wins over a more recent shorter one.
  const std::vector<int32_t> longer{1, 2, 3, 10, 9, 3, 11, 1, 2, 3};
  EXPECT_EQ(drafter.lookup(longer, 1), (std::vector<int32_t>{10}));
  // No earlier occurrence: nothing to propose.
  EXPECT_TRUE(drafter.lookup(std::vector<int32_t>{1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(drafter.lookup(std::vector<int32_t>{}, 4).empty());
  EXPECT_THROW(NgramDrafter(0, 2), Error);
}

}  // namespace
}  // namespace tandem
