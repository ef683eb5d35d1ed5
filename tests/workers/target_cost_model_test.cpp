// TargetCostModel: bucketed, smoothed pass times; linear interpolation and
// extrapolation; v(B, k) = T(B·k) / T(B), and 1 until calibrated.
#include "workers/speculation/target_cost_model.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tandem {
namespace {

// T(n) = 1 + n at n = 1, 2, 4, 8: an affine curve the model must reproduce.
TargetCostModel affine() {
  TargetCostModel model;
  for (int n : {1, 2, 4, 8}) model.record(n, 1.0 + n);
  return model;
}

TEST(TargetCostModel, WithoutDataItKnowsNothingAndVIsOne) {
  TargetCostModel model;
  EXPECT_FALSE(model.has_data());
  EXPECT_EQ(model.seconds(16), 0.0);
  model.mark_calibrated();
  EXPECT_EQ(model.relative_cost(4, 8), 1.0);
}

TEST(TargetCostModel, InterpolatesLinearlyBetweenBuckets) {
  const TargetCostModel model = affine();
  EXPECT_TRUE(model.has_data());
  for (int n : {1, 2, 4, 8}) EXPECT_DOUBLE_EQ(model.seconds(n), 1.0 + n);
  EXPECT_DOUBLE_EQ(model.seconds(3), 4.0);
  EXPECT_DOUBLE_EQ(model.seconds(5), 6.0);
  EXPECT_DOUBLE_EQ(model.seconds(7), 8.0);
}

TEST(TargetCostModel, ExtrapolatesFromTheLastTwoBuckets) {
  TargetCostModel model = affine();
  EXPECT_DOUBLE_EQ(model.seconds(16), 17.0);
  EXPECT_DOUBLE_EQ(model.seconds(100), 101.0);
  // A steeper last segment steers the extrapolation, not the first ones.
  model.record(16, 33.0);  // slope (33 - 9) / (16 - 8) = 3 past 8
  EXPECT_DOUBLE_EQ(model.seconds(12), 21.0);
  EXPECT_DOUBLE_EQ(model.seconds(20), 45.0);
  // Below the smallest bucket: that bucket's time.
  TargetCostModel from_four;
  from_four.record(4, 2.0);
  from_four.record(8, 3.0);
  EXPECT_DOUBLE_EQ(from_four.seconds(1), 2.0);
  // One bucket alone: flat.
  TargetCostModel single;
  single.record(4, 2.0);
  EXPECT_DOUBLE_EQ(single.seconds(64), 2.0);
}

TEST(TargetCostModel, NoisyPointsNeverMakeMoreTokensCheaper) {
  TargetCostModel model;
  model.record(1, 1.0);
  model.record(2, 0.5);  // noise: the larger pass measured faster
  EXPECT_DOUBLE_EQ(model.seconds(64), 0.5);  // not extrapolated below zero
  model.mark_calibrated();
  EXPECT_DOUBLE_EQ(model.relative_cost(1, 2), 1.0);
}

TEST(TargetCostModel, ABucketHoldsTheMeanOfItsRangeThenFollowsRecentPasses) {
  TargetCostModel model(0.1);
  model.record(1, 1.0);
  model.record(5, 6.0);  // bucket [4, 8): mean point (6, 7)
  model.record(7, 8.0);
  EXPECT_DOUBLE_EQ(model.seconds(6), 7.0);
  EXPECT_DOUBLE_EQ(model.seconds(1), 1.0);
  // After many passes at a new speed the point moves there (smoothing 0.1).
  for (int i = 0; i < 200; ++i) model.record(6, 14.0);
  EXPECT_NEAR(model.seconds(6), 14.0, 1e-6);
  // Passes that measured nothing are ignored.
  model.record(0, 5.0);
  model.record(3, 0.0);
  EXPECT_DOUBLE_EQ(model.seconds(1), 1.0);
  EXPECT_THROW(TargetCostModel(0.0), Error);
  EXPECT_THROW(TargetCostModel(1.5), Error);
}

TEST(TargetCostModel, RelativeCostIsTheRatioOnceCalibrated) {
  TargetCostModel model = affine();
  EXPECT_EQ(model.relative_cost(2, 4), 1.0);  // not calibrated: Theorem 3.8's v ≡ 1
  model.mark_calibrated();
  EXPECT_TRUE(model.calibrated());
  EXPECT_DOUBLE_EQ(model.relative_cost(2, 4), 9.0 / 3.0);  // T(8) / T(2)
  EXPECT_DOUBLE_EQ(model.relative_cost(1, 3), 4.0 / 2.0);  // T(3) / T(1), interpolated
  EXPECT_DOUBLE_EQ(model.relative_cost(4, 1), 1.0);
}

}  // namespace
}  // namespace tandem
