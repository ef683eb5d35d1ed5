// choose_shape: which way a step drafts, from measured costs.
#include "workers/speculation/pipeline_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tandem {
namespace {

// Costs where both passes grow linearly with their batch (compute-bound):
// half the sessions cost half the time.
PipelineCosts linear(double draft, double target, double hit) {
  PipelineCosts c;
  c.draft_all = draft;
  c.target_all = target;
  c.draft_group_a = c.draft_group_b = draft / 2;
  c.target_group_a = c.target_group_b = target / 2;
  c.hit_rate = hit;
  c.ahead_factor = 1.25;  // γ = 4
  return c;
}

// Costs that do not grow with the batch (memory-bound): half the sessions
// cost the same.
PipelineCosts flat(double draft, double target, double hit) {
  PipelineCosts c = linear(draft, target, hit);
  c.draft_group_a = c.draft_group_b = draft;
  c.target_group_a = c.target_group_b = target;
  return c;
}

TEST(PipelinePolicy, TheFormulasPerVerifiedBlock) {
  const PipelineCosts c = linear(0.4, 1.0, 0.5);
  EXPECT_DOUBLE_EQ(plain_block_seconds(c), 1.4);
  EXPECT_DOUBLE_EQ(ahead_block_seconds(c), 0.5 * 0.4 + 1.0);  // max(T, 1.25 D) = T
  EXPECT_DOUBLE_EQ(pingpong_block_seconds(c), 2 * 0.5);        // max(0.2, 0.5) twice
}

TEST(PipelinePolicy, AMeasuredAheadDraftReplacesTheEstimate) {
  // A draft costlier than the target: estimated, drafting ahead one token
  // more would take longer than plain; measured on the drafter, it does not.
  PipelineCosts c = flat(1.4, 1.0, 0.5);
  c.ahead_factor = 1.5;  // γ = 2
  EXPECT_DOUBLE_EQ(ahead_block_seconds(c), 0.5 * 1.4 + 2.1);  // > plain's 2.4
  EXPECT_EQ(choose_shape(PipelinePolicy{}, c, true, 1), StepShape::plain);
  c.ahead_draft = 1.5;
  EXPECT_DOUBLE_EQ(ahead_block_seconds(c), 0.5 * 1.4 + 1.5);  // < 0.95 of plain
  EXPECT_EQ(choose_shape(PipelinePolicy{}, c, true, 1), StepShape::ahead);
}

TEST(PipelinePolicy, PlainWhenOffWhenTheDraftCannotOverlapOrNothingIsMeasured) {
  const PipelinePolicy automatic;
  EXPECT_EQ(choose_shape({PipelineMode::off, 0.2}, linear(0.4, 1, 0.9), true, 4), StepShape::plain);
  EXPECT_EQ(choose_shape(automatic, linear(0.4, 1, 0.9), false, 4), StepShape::plain);
  EXPECT_EQ(choose_shape(automatic, linear(0, 0, 0.9), true, 4), StepShape::plain);
  EXPECT_EQ(choose_shape(automatic, linear(0.4, 1, 0.9), true, 0), StepShape::plain);
}

TEST(PipelinePolicy, ForcedModesRunWhereTheyCan) {
  EXPECT_EQ(choose_shape({PipelineMode::ahead, 0.2}, flat(1, 1, 0), true, 1), StepShape::ahead);
  EXPECT_EQ(choose_shape({PipelineMode::pingpong, 0.2}, flat(1, 1, 0), true, 4),
            StepShape::pingpong);
  // One session cannot make two groups.
  EXPECT_EQ(choose_shape({PipelineMode::pingpong, 0.2}, flat(1, 1, 0), true, 1), StepShape::ahead);
}

TEST(PipelinePolicy, AutomaticPicksTheFastestShape) {
  const PipelinePolicy automatic;
  // Memory-bound passes and a good draft: drafting ahead hides most drafts.
  EXPECT_EQ(choose_shape(automatic, flat(0.5, 1, 0.8), true, 4), StepShape::ahead);
  // Compute-bound passes: two half groups, each hidden behind the other.
  EXPECT_EQ(choose_shape(automatic, linear(0.9, 1, 0.1), true, 8), StepShape::pingpong);
  // A poor guess and a draft as slow as the target: ahead would only add.
  EXPECT_EQ(choose_shape(automatic, flat(1, 1, 0.0), true, 4), StepShape::plain);
}

TEST(PipelinePolicy, PingPongGroupsBalanceDraftAgainstVerify) {
  // Drafting costs a fixed start-up plus little per session, verifying
  // grows with the batch: the chosen split's two-step cycle
  // max(D(a), T(n-a)) + max(D(n-a), T(a)) is no longer than any other's.
  const auto draft = [](int k) { return 4.0 + 0.2 * k; };
  const auto target = [](int k) { return 1.0 * k * k; };
  const int a = pingpong_split(8, draft, target);
  const auto cycle = [&](int x) {
    return std::max(draft(x), target(8 - x)) + std::max(draft(8 - x), target(x));
  };
  for (int x = 1; x < 8; ++x) EXPECT_LE(cycle(a), cycle(x)) << "split " << x;
  // Passes that cost the same whatever their batch: any split is as good,
  // so the groups stay even; unmeasured, too.
  EXPECT_EQ(pingpong_split(8, [](int) { return 1.0; }, [](int) { return 2.0; }), 4);
  EXPECT_EQ(pingpong_split(7, [](int) { return 0.0; }, [](int) { return 0.0; }), 3);
  EXPECT_EQ(pingpong_split(1, draft, target), 0);
}

}  // namespace
}  // namespace tandem
