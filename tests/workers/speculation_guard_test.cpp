// SpeculationGuard: the two kinds of steps in turn until each has kMinSteps;
// drafting stops where it has been measured slower than plain decoding at
// that batch size and is re-measured afresh (the switch, then kMinSteps
// counted steps) after kExplore decisions, then twice as many each time
// (up to 8 kExplore);
// while drafting wins, plain is re-measured on one step in kExplore (both
// from the default SpeculationTuning). A drafting step after two or more
// plain ones (the draft cache's catch-up) is not counted.
#include "workers/speculation/speculation_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// `decisions` steps at batch B, each recorded as the guard decided: 10
// tokens in `drafting` seconds or `plain` seconds. Returns the decisions
// (counted from 1) that drafted.
std::vector<int> run_steps(SpeculationGuard& guard, int batch, int decisions, double drafting, double plain) {
  std::vector<int> drafted;
  for (int d = 1; d <= decisions; ++d) {
    const bool draft = guard.allow_drafting(batch);
    guard.record(batch, draft, 10, draft ? drafting : plain);
    if (draft) drafted.push_back(d);
  }
  return drafted;
}

TEST(SpeculationGuard, DraftsUntilDraftingHasBeenMeasured) {
  SpeculationGuard guard;
  EXPECT_EQ(allowed(guard, 8, 100), 100);
  guard.record(8, /*drafted=*/false, 8, 0.01);  // plain alone says nothing against drafting
  EXPECT_EQ(allowed(guard, 8, 100), 100);
}

TEST(SpeculationGuard, TakesTheKindsInTurnUntilJudgedThenMeasuresPlainOnceInKExplore) {
  SpeculationGuard guard;
  EXPECT_TRUE(guard.allow_drafting(4));  // nothing measured: drafting first
  guard.record(4, /*drafted=*/true, 10, 0.01);
  // Then plain, until a plain step has been measured (a step that prefills
  // records nothing, so the same answer comes again).
  EXPECT_FALSE(guard.allow_drafting(4));
  EXPECT_FALSE(guard.allow_drafting(4));
  guard.record(4, /*drafted=*/false, 4, 0.01);
  EXPECT_TRUE(guard.allow_drafting(4));
  // kMinSteps of each kind in turn: 2 kMinSteps decisions, half of them drafting.
  SpeculationGuard fresh;
  int drafting = 0;
  for (int i = 0; i < 2 * kMinSteps; ++i) {
    const bool draft = fresh.allow_drafting(4);
    drafting += draft;
    fresh.record(4, draft, draft ? 10 : 4, 0.01);
  }
  EXPECT_EQ(drafting, kMinSteps);
  // Judged now: drafting (1000 tokens/s) beats plain (400): plain one step in kExplore.
  EXPECT_EQ(allowed(fresh, 4, 4 * kExplore), 4 * kExplore - 4);
}

TEST(SpeculationGuard, StopsDraftingWhereItWasMeasuredSlowerAndBacksOffReMeasuring) {
  SpeculationGuard guard;
  record_steps(guard, 32, /*drafted=*/true, 40, 0.04);   // 1000 tokens/s
  record_steps(guard, 32, /*drafted=*/false, 32, 0.02);  // 1600 tokens/s
  // Re-measured after kExplore decisions, then after twice as many each
  // time the verdict stands (drafting stays slower), at most 8 kExplore
  // apart. Each re-measurement drafts 1 + kMinSteps decisions in a row:
  // the switch (not counted), then kMinSteps counted afresh.
  // (40 kExplore decisions end just after the seventh.)
  const std::vector<int> drafted = run_steps(guard, 32, 40 * kExplore, 0.01, 0.00625);
  std::vector<int> starts, lengths;
  for (size_t i = 0; i < drafted.size(); ++i) {
    if (i > 0 && drafted[i] == drafted[i - 1] + 1) {
      ++lengths.back();
    } else {
      starts.push_back(drafted[i]);
      lengths.push_back(1);
    }
  }
  ASSERT_EQ(starts.size(), 7u);
  EXPECT_EQ(starts[0], kExplore);
  for (size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(lengths[i], 1 + kMinSteps) << "re-measurement " << i;
    if (i > 0) {
      EXPECT_EQ(starts[i] - starts[i - 1], kMinSteps + std::min(1 << i, 8) * kExplore) << "re-measurement " << i;
    }
  }
  // Smaller batch sizes keep their own verdicts.
  EXPECT_EQ(allowed(guard, 1, 10), 10);
  // Batch sizes near the same power of two share one: 27..45 round to 32.
  SpeculationGuard shared;
  record_steps(shared, 32, /*drafted=*/true, 40, 0.04);
  record_steps(shared, 32, /*drafted=*/false, 32, 0.02);
  EXPECT_EQ(allowed(shared, 27, kExplore - 1), 0);
  EXPECT_EQ(allowed(shared, 45, 1), 1);  // the kExplore-th decision of the bucket
}

TEST(SpeculationGuard, AVerdictThatFlipsBackStartsTheBackOffOver) {
  SpeculationGuard guard;
  record_steps(guard, 8, /*drafted=*/true, 10, 0.02);   // 500 tokens/s
  record_steps(guard, 8, /*drafted=*/false, 8, 0.008);  // 1000: drafting loses
  // Re-measured, still slower, at kExplore and 2 kExplore later.
  EXPECT_EQ(run_steps(guard, 8, 3 * kExplore + 2 * kMinSteps, 0.02, 0.01).size(), 2u * (1 + kMinSteps));
  for (int i = 0; i < 20; ++i) guard.record(8, true, 40, 0.01);  // 4000: drafting wins
  EXPECT_EQ(allowed(guard, 8, kExplore), kExplore - 1);
  record_steps(guard, 8, /*drafted=*/false, 80, 0.008);  // 10000: it loses again
  for (int i = 0; i < 20; ++i) guard.record(8, false, 80, 0.008);
  EXPECT_EQ(allowed(guard, 8, kExplore), 1);  // after kExplore again, not 4 kExplore
}

TEST(SpeculationGuard, AReMeasurementForgetsTheOldDraftingRate) {
  SpeculationGuard guard;
  record_steps(guard, 4, /*drafted=*/true, 10, 0.02);  // 500 tokens/s
  record_steps(guard, 4, /*drafted=*/false, 4, 0.002); // 2000: drafting loses
  EXPECT_DOUBLE_EQ(guard.drafting_rate(4), 500.0);
  EXPECT_EQ(allowed(guard, 4, kExplore - 1), 0);
  EXPECT_TRUE(guard.allow_drafting(4));  // the re-measurement
  // Not measured until a counted drafting step: a rate of 0, not the old 500
  // (which the measured-speed-up gauge would go on showing).
  EXPECT_EQ(guard.drafting_rate(4), 0.0);
  guard.record(4, true, 10, 0.5);  // the switch: not counted
  EXPECT_EQ(guard.drafting_rate(4), 0.0);
  guard.record(4, true, 10, 0.001);
  EXPECT_DOUBLE_EQ(guard.drafting_rate(4), 10000.0);
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

// The trap this rule closes: drafting judged slower, every re-measurement
// after a run of plain steps pays the draft cache's catch-up over all of
// them, and counted, each would confirm the verdict. Here every first
// drafting step after plain ones is slow (the catch-up) and every later
// one fast: the guard counts only the fast ones and comes back to drafting.
TEST(SpeculationGuard, ADraftingStepAfterPlainOnesIsNotCountedSoAVerdictCanFlip) {
  SpeculationGuard guard;
  record_steps(guard, 1, /*drafted=*/true, 10, 0.02);   // 500 tokens/s
  record_steps(guard, 1, /*drafted=*/false, 1, 0.001);  // 1000: drafting loses
  // The first re-measurement (at kExplore) counts only its kMinSteps quick
  // steps, so its verdict is that drafting wins; from then on plain decoding
  // is re-measured once in kExplore decisions.
  int plain_before = 0;
  int drafted_last = 0;
  for (int d = 1; d <= 2 * kExplore + kMinSteps; ++d) {
    const bool draft = guard.allow_drafting(1);
    // The switch after a run of plain steps catches up (3 tokens in 50 ms);
    // any other drafting step is quick (3 tokens in 1 ms: 3000 tokens/s).
    guard.record(1, draft, draft ? 3 : 1, draft && plain_before >= 2 ? 0.05 : 0.001);
    plain_before = draft ? 0 : plain_before + 1;
    if (d > kExplore + kMinSteps) drafted_last += draft;
  }
  EXPECT_NEAR(guard.drafting_rate(1), 3000.0, 1e-6);
  EXPECT_EQ(drafted_last, kExplore - 1);
  // A drafting step after one plain step (the kinds in turn) counts.
  SpeculationGuard in_turn;
  in_turn.record(4, false, 4, 0.01);
  in_turn.record(4, true, 10, 0.01);
  EXPECT_DOUBLE_EQ(in_turn.drafting_rate(4), 1000.0);
  // After two plain steps it does not, and the next drafting one does.
  SpeculationGuard after_two;
  after_two.record(4, false, 4, 0.01);
  after_two.record(4, false, 4, 0.01);
  after_two.record(4, true, 10, 0.5);
  EXPECT_EQ(after_two.drafting_rate(4), 0.0);
  after_two.record(4, true, 10, 0.01);
  EXPECT_DOUBLE_EQ(after_two.drafting_rate(4), 1000.0);
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
