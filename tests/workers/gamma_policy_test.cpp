// γ choice from Theorem 3.8 and from the batched cost model
// S(γ) = (1-α^(γ+1)) / ((1-α)(γc + v(γ+1))), and the prompt-lookup
// drafter's matching.
#include "workers/speculation/gamma_policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "workers/speculation/gamma_controller.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/target_cost_model.h"

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
  SpeculationTuning tuning;
  tuning.prior_alpha = 0.6;
  const GammaController gamma(tuning);
  EXPECT_EQ(gamma.policy_gamma(policy, 0, 0, 0.05), best_gamma(0.6, 0.05, 8));
  EXPECT_EQ(gamma.policy_gamma(policy, 95, 100, 0.05), best_gamma((95 + 2.4) / 104, 0.05, 8));
  EXPECT_EQ(gamma.policy_gamma(policy, 0, 100, 0.05), 0);
  GammaPolicy fixed;
  fixed.gamma = 3;
  EXPECT_EQ(gamma.policy_gamma(fixed, 0, 100, 0.9), 3);
}

TEST(GammaPolicy, BatchedSpeedupDividesByTheBlocksTargetCost) {
  for (double alpha : {0.0, 0.5, 0.9}) {
    for (double c : {0.0, 0.1}) {
      for (int gamma = 0; gamma <= 6; ++gamma) {
        const double v = 1.0 + 0.25 * gamma;
        const double closed_form =
            (1 - std::pow(alpha, gamma + 1)) / ((1 - alpha) * (gamma * c + v));
        EXPECT_NEAR(expected_speedup(alpha, c, gamma, v), closed_form, 1e-12);
      }
    }
  }
}

// The brute-force argmax of S over [0, max_gamma] with v(k) given, ties to
// the smaller γ, plain decoding (S(0) = 1 / v(1)) the baseline.
int argmax_speedup(double alpha, double c, int max_gamma, const StepCost& v) {
  int best = 0;
  double best_s = 1.0 / v(1);
  for (int g = 1; g <= max_gamma; ++g) {
    const double s = (1 - std::pow(alpha, g + 1)) / ((1 - alpha) * (g * c + v(g + 1)));
    if (s > best_s + 1e-12) {
      best = g;
      best_s = s;
    }
  }
  return best;
}

// A TargetCostModel calibrated with passes timed by `seconds_of(n)`.
TargetCostModel calibrated_model(double (*seconds_of)(int)) {
  TargetCostModel model;
  for (int n = 1; n <= 512; n *= 2) model.record(n, seconds_of(n));
  model.mark_calibrated();
  return model;
}

TEST(GammaPolicy, ComputeBoundTargetNeverSpeculates) {
  // T(n) = n (a compute-bound target, as 32 sessions of the tiny model on
  // two cores): v(B, k) = Bk / B = k, so S(γ) = Σα^i / (γc + γ + 1) < 1 for
  // every γ >= 1 when α < 1: no γ beats plain decoding.
  const TargetCostModel linear = calibrated_model([](int n) { return 1e-3 * n; });
  const StepCost v = [&](int k) { return linear.relative_cost(32, k); };
  EXPECT_NEAR(v(5), 5.0, 1e-9);
  int speculating_without_v = 0;
  for (double alpha : {0.0, 0.3, 0.6, 0.9, 0.99, 0.999}) {
    for (double c : {0.0, 0.01, 0.2}) {
      EXPECT_EQ(best_gamma(alpha, c, 16, v), 0) << alpha << " " << c;
      GammaPolicy policy{true, 16};
      EXPECT_EQ(GammaController().policy_gamma(policy, alpha * 1000, 1000, c, v), 0)
          << alpha << " " << c;
      speculating_without_v += best_gamma(alpha, c, 16) > 0;
    }
  }
  // The same (α, c) under Theorem 3.8's flat cost mostly do speculate, so the
  // zeros above come from v.
  EXPECT_GE(speculating_without_v, 10);
}

TEST(GammaPolicy, FlatCostGivesTheoremThreeEightChoice) {
  // A memory-bound target: a pass costs the same whatever it carries, v ≡ 1.
  const TargetCostModel flat = calibrated_model([](int) { return 2e-3; });
  const StepCost v = [&](int k) { return flat.relative_cost(8, k); };
  const StepCost one = [](int) { return 1.0; };
  // (c = 0 with a small α is left out: S then grows by α^(γ+1) per γ, below
  // rounding, and the argmax is a matter of the last bit.)
  for (double alpha : {0.1, 0.5, 0.7, 0.8, 0.9, 0.99}) {
    for (double c : {0.01, 0.05, 0.2, 1.0}) {
      const int theorem = best_gamma(alpha, c, 16);  // no v: Theorem 3.8
      EXPECT_EQ(best_gamma(alpha, c, 16, v), theorem) << alpha << " " << c;
      EXPECT_EQ(argmax_speedup(alpha, c, 16, one), theorem) << alpha << " " << c;
    }
  }
  EXPECT_EQ(best_gamma(0.9, 0.01, 16, v), argmax_speedup(0.9, 0.01, 16, one));
  EXPECT_GT(best_gamma(0.9, 0.01, 16, v), 3);
}

TEST(GammaPolicy, PartlyBatchedCostIsTheArgmaxOfTheBatchedModel) {
  // Between the two: v(k) grows, but slower than k. The chosen γ is the
  // argmax of the batched S, and lies between the flat and linear choices.
  const StepCost v = [](int k) { return 1.0 + 0.15 * (k - 1); };
  for (double alpha : {0.5, 0.8, 0.9, 0.97}) {
    for (double c : {0.0, 0.02, 0.1}) {
      const int chosen = best_gamma(alpha, c, 16, v);
      EXPECT_EQ(chosen, argmax_speedup(alpha, c, 16, v)) << alpha << " " << c;
      EXPECT_LE(chosen, best_gamma(alpha, c, 16)) << alpha << " " << c;
    }
  }
  EXPECT_GT(best_gamma(0.9, 0.02, 16, v), 0);
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
