// GammaController: the α estimate's prior, probing and its back-off, the
// caps, the tuning reaching the guard, and the speed-ups it predicts
// (against Theorem 3.8 computed here) and measures: the parts of the γ
// decision that are the controller's own (best_gamma is in
// gamma_policy_test.cpp).
#include "workers/speculation/gamma_controller.h"

#include <gtest/gtest.h>

#include <cmath>
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
  std::vector<int> explored_at;
  for (int d = 1; d <= 32; ++d) {
    const bool draft = guard.allow_drafting(4);
    guard.record(4, draft, draft ? 10 : 4, draft ? 0.1 : 0.01);  // drafting keeps losing
    if (draft) explored_at.push_back(d);
  }
  // After guard_explore_every decisions, then twice as many each time, each
  // re-measurement the switch and guard_min_steps counted steps.
  EXPECT_EQ(explored_at, (std::vector<int>{4, 5, 6, 14, 15, 16, 32}));
}

TEST(GammaController, PredictsTheoremThreeEightWithMeasuredAlphaCostAndV) {
  SpeculationTuning tuning;
  tuning.prior_alpha = 0.6;
  tuning.prior_weight = 4;
  GammaController gamma(tuning);
  // Target passes of 1, 2, 4 and 8 new tokens took 1, 1.5, 2 and 3 ms:
  // T(5) lies on the line from (4, 2 ms) to (8, 3 ms), 2.25 ms, so at batch
  // 1 v(5) = 2.25 / 1; v(2) = 1.5.
  gamma.record_pass(1, 0.001);
  gamma.record_pass(2, 0.0015);
  gamma.record_pass(4, 0.002);
  gamma.record_pass(8, 0.003);
  gamma.cost_model().mark_calibrated();
  NoDrafter none;
  Drafting drafting({&none});
  drafting.slots()[0].cost_ratio = 0.05;  // c, as no draft pass has been timed
  EngineSession s = session_with(30, 40, GammaPolicy{true, 8});
  std::vector<EngineSession*> running{&s};
  gamma.begin_step(running, drafting.slots());
  // Computed here from the definitions: α = (Σβ + prior·weight) / (n + weight).
  const double alpha = (30 + 0.6 * 4) / (40 + 4);
  const double c = 0.05;
  const auto closed_form = [&](int g, double v) {
    return (1 - std::pow(alpha, g + 1)) / ((1 - alpha) * (g * c + v));
  };
  EXPECT_NEAR(gamma.predicted_speedup(s, 4), closed_form(4, 2.25), 1e-9);
  EXPECT_NEAR(gamma.predicted_speedup(s, 1), closed_form(1, 1.5), 1e-9);
  EXPECT_DOUBLE_EQ(gamma.predicted_speedup(s, 0), 1.0);  // plain decoding
}

TEST(GammaController, MeasuresDraftingOverPlainThroughputOnceBothRan) {
  GammaController gamma;
  StepReport drafting_step;
  drafting_step.sessions.push_back({});
  drafting_step.sessions.back().verified = true;
  drafting_step.sessions.back().gamma = 4;
  drafting_step.sessions.back().emitted = 3;
  drafting_step.step_seconds = 0.003;  // 1000 tokens/s
  StepReport plain_step = drafting_step;
  plain_step.sessions.back().gamma = 0;
  plain_step.sessions.back().emitted = 1;
  plain_step.step_seconds = 0.0025;  // 400 tokens/s
  EXPECT_EQ(gamma.measured_speedup(1), 0.0);
  for (int i = 0; i < 5; ++i) gamma.record_step(1, drafting_step);
  EXPECT_EQ(gamma.measured_speedup(1), 0.0);  // nothing to compare with yet
  for (int i = 0; i < 5; ++i) gamma.record_step(1, plain_step);
  EXPECT_NEAR(gamma.measured_speedup(1), 1000.0 / 400.0, 1e-9);
  EXPECT_EQ(gamma.measured_speedup(64), 0.0);  // another batch size: its own rates
}

}  // namespace
}  // namespace tandem
