// GammaController: the α estimate's prior, probing and its back-off, the
// caps, and the tuning reaching the guard: the parts of the γ decision
// that are the controller's own (best_gamma is in gamma_policy_test.cpp).
#include "workers/speculation/gamma_controller.h"

#include <gtest/gtest.h>

#include <vector>

#include "workers/speculation/drafting.h"
#include "workers/speculation/speculative_session.h"

namespace tandem {
namespace {

// A session that has verified `count` positions with Σβ = beta_sum.
EngineSession session_with(double beta_sum, int count, GammaPolicy policy) {
  EngineSession s;
  s.request.gamma = policy;
  s.request.max_new_tokens = 1000;
  s.tokens = {1, 2, 3};
  s.prompt_length = 3;
  s.result.stats.beta_sum = beta_sum;
  s.result.stats.beta_count = count;
  return s;
}

TEST(GammaController, AlphaIsShrunkTowardTheTuningsPrior) {
  SpeculationTuning tuning;
  tuning.prior_alpha = 0.5;
  tuning.prior_weight = 10;
  const GammaController gamma(tuning);
  EXPECT_DOUBLE_EQ(gamma.alpha(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(gamma.alpha(9, 10), (9 + 5.0) / 20);
  SpeculationStats stats;
  stats.beta_sum = 90;
  stats.beta_count = 100;
  EXPECT_DOUBLE_EQ(gamma.alpha(stats), (90 + 5.0) / 110);
}

TEST(GammaController, ProbesEveryProbeEveryStepsAndBacksOffToTheMaximum) {
  SpeculationTuning tuning;
  tuning.probe_every = 3;
  tuning.max_probe_every = 8;
  GammaController gamma(tuning);
  NoDrafter none;
  Drafting drafting({&none});
  // α ≈ 0 and a costly draft: the automatic policy says γ = 0.
  EngineSession s = session_with(0, 1000, GammaPolicy{true, 4});
  drafting.slots()[0].cost_ratio = 1.0;
  std::vector<EngineSession*> running{&s};
  std::vector<int> probes_at;
  for (int step = 1; step <= 24; ++step) {
    gamma.begin_step(running, drafting.slots());
    const GammaChoice choice = gamma.choose(s);
    EXPECT_TRUE(choice.policy_zero);
    EXPECT_EQ(choice.gamma, choice.probe ? 1 : 0);
    if (choice.probe) probes_at.push_back(step);
    gamma.verified(s, choice, choice.gamma);
  }
  // First after 3 steps, then 6 (doubled), then 8 (capped), then 8 again.
  EXPECT_EQ(probes_at, (std::vector<int>{3, 9, 17}));
}

TEST(GammaController, CapsByWhatTheSessionMayStillEmit) {
  const GammaController gamma({}, /*context_length=*/10);
  EngineSession s = session_with(0, 0, GammaPolicy{false, 6});
  s.request.max_new_tokens = 4;  // 3 prompt tokens, nothing generated yet
  EXPECT_EQ(gamma.cap(s, 6), 3);  // the step's own token is the 4th
  EXPECT_EQ(gamma.cap(s, 6, 2), 1);
  s.request.max_new_tokens = 100;
  EXPECT_EQ(gamma.cap(s, 9), 7);  // the context: 10 - 3
}

TEST(GammaController, TheGuardReadsTheTuning) {
  SpeculationTuning tuning;
  tuning.guard_min_steps = 2;
  tuning.guard_explore_every = 4;
  SpeculationGuard guard(tuning);
  for (int i = 0; i < 2; ++i) {
    guard.record(4, /*drafted=*/true, 10, 0.1);   // 100 tokens/s
    guard.record(4, /*drafted=*/false, 4, 0.01);  // 400 tokens/s: drafting loses
  }
  int allowed = 0;
  for (int i = 0; i < 4 * 4; ++i) allowed += guard.allow_drafting(4);
  EXPECT_EQ(allowed, 4);  // one decision in guard_explore_every
}

}  // namespace
}  // namespace tandem
