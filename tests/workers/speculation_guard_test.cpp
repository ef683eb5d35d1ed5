// SpeculationGuard: drafting stops where it has been measured slower than
// plain decoding at that batch size (after kMinSteps steps of each kind),
// and each side is re-measured on exactly one step in kExplore (both from
// the default SpeculationTuning).
#include "workers/speculation/speculation_guard.h"

#include <gtest/gtest.h>

namespace tandem {
namespace {

constexpr int kExplore = SpeculationTuning{}.guard_explore_every;
constexpr int kMinSteps = SpeculationTuning{}.guard_min_steps;

// kMinSteps identical steps of one kind.
void record_steps(SpeculationGuard& guard, int batch, bool drafted, int tokens, double seconds) {
  for (int i = 0; i < kMinSteps; ++i) guard.record(batch, drafted, tokens, seconds);
}

// How many of `decisions` consecutive decisions at batch B allow drafting.
int allowed(SpeculationGuard& guard, int batch, int decisions) {
  int count = 0;
  for (int i = 0; i < decisions; ++i) count += guard.allow_drafting(batch);
  return count;
}

TEST(SpeculationGuard, DraftsUntilDraftingHasBeenMeasured) {
  SpeculationGuard guard;
  EXPECT_EQ(allowed(guard, 8, 100), 100);
  guard.record(8, /*drafted=*/false, 8, 0.01);  // plain alone says nothing against drafting
  EXPECT_EQ(allowed(guard, 8, 100), 100);
}

TEST(SpeculationGuard, MeasuresPlainStepsOnceInKExploreWhileDraftingWins) {
  SpeculationGuard guard;
  guard.record(4, /*drafted=*/true, 10, 0.01);  // one drafting step: not enough to judge
  EXPECT_EQ(allowed(guard, 4, 64), 64);
  record_steps(guard, 4, /*drafted=*/true, 10, 0.01);  // 1000 tokens/s, plain unmeasured
  EXPECT_EQ(allowed(guard, 4, 64), 64 - 8);            // plain sampled one step in 8
  record_steps(guard, 4, /*drafted=*/false, 4, 0.01);  // 400 tokens/s: drafting wins
  EXPECT_EQ(allowed(guard, 4, 4 * kExplore), 4 * kExplore - 4);
}

TEST(SpeculationGuard, StopsDraftingWhereItWasMeasuredSlowerExceptToExplore) {
  SpeculationGuard guard;
  record_steps(guard, 32, /*drafted=*/true, 40, 0.04);   // 1000 tokens/s
  record_steps(guard, 32, /*drafted=*/false, 32, 0.02);  // 1600 tokens/s
  EXPECT_EQ(allowed(guard, 32, 4 * kExplore), 4);
  // Smaller batch sizes keep their own verdicts.
  EXPECT_EQ(allowed(guard, 1, 10), 10);
  // Batch sizes near the same power of two share one: 27..45 round to 32.
  EXPECT_EQ(allowed(guard, 27, kExplore), 1);
  EXPECT_EQ(allowed(guard, 45, kExplore), 1);
}

TEST(SpeculationGuard, RecoversWhenDraftingBecomesFasterAgain) {
  SpeculationGuard guard;
  record_steps(guard, 2, true, 10, 0.02);   // 500
  record_steps(guard, 2, false, 2, 0.002);  // 1000: drafting loses
  EXPECT_LT(guard.drafting_rate(2), guard.plain_rate(2));
  for (int i = 0; i < 20; ++i) guard.record(2, true, 30, 0.01);  // 3000: the smoothed rate follows
  EXPECT_GT(guard.drafting_rate(2), guard.plain_rate(2));
  EXPECT_EQ(allowed(guard, 2, 2 * kExplore), 2 * kExplore - 2);
}

TEST(SpeculationGuard, RatesAreTokensOverSecondsNotMeansOfStepRates) {
  SpeculationGuard guard;
  // Drafting steps alternate between a quick 1-token step (1000 tokens/s)
  // and a slow 10-token one (100 tokens/s): 11 tokens in 0.101 s, about 109
  // tokens/s, though the mean of the two step rates is 550.
  for (int i = 0; i < kMinSteps; ++i) {
    guard.record(4, true, 1, 0.001);
    guard.record(4, true, 10, 0.1);
  }
  record_steps(guard, 4, false, 3, 0.01);  // plain: 300 tokens/s
  EXPECT_GT(guard.drafting_rate(4), 100.0);
  EXPECT_LT(guard.drafting_rate(4), 120.0);
  EXPECT_EQ(allowed(guard, 4, kExplore), 1);  // drafting loses
}

TEST(SpeculationGuard, IgnoresEmptyOrUntimedSteps) {
  SpeculationGuard guard;
  guard.record(8, true, 0, 0.01);
  guard.record(8, true, 5, 0.0);
  EXPECT_EQ(guard.drafting_rate(8), 0.0);
  EXPECT_EQ(allowed(guard, 8, 20), 20);
}

}  // namespace
}  // namespace tandem
