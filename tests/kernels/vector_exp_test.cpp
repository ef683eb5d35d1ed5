// exp8 against glibc's double exp rounded to float (an independent
// implementation, correctly rounded but for the rarest double-rounding
// cases): within 1 ulp over a sweep of the whole float range, the special
// values exact, and each lane independent of its neighbours.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/vector_exp.h"

namespace tandem::cpu {
namespace {

float reference_exp(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

// Distance in representable floats between two non-negative floats.
int64_t ulps_apart(float a, float b) {
  return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
}

float exp_one(float x) { return exp8(splat(x))[0]; }

TEST(VectorExp, WithinOneUlpOverEveryFloatSampled) {
  // Every 613th bit pattern of the finite floats, both signs: about 7
  // million values, through 8-lane calls of consecutive samples.
  int64_t worst = 0;
  float worst_x = 0;
  int64_t checked = 0;
  constexpr uint32_t kStride = 613;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t bits = 0; bits < 0x7f800000u; bits += 8 * kStride) {
      Floats8 x;
      for (int l = 0; l < 8; ++l) x[l] = std::bit_cast<float>(sign | std::min(bits + l * kStride, 0x7f7fffffu));
      const Floats8 y = exp8(x);
      for (int l = 0; l < 8; ++l) {
        const int64_t ulps = ulps_apart(y[l], reference_exp(x[l]));
        if (ulps > worst) worst = ulps, worst_x = x[l];
        ++checked;
      }
    }
  }
  EXPECT_LE(worst, 1) << "at x = " << worst_x << ": " << exp_one(worst_x) << " vs " << reference_exp(worst_x);
  EXPECT_GT(checked, 6'000'000);
}

TEST(VectorExp, WithinOneUlpDenselyWhereResultsAreSubnormalOrNearOverflow) {
  // Every float where the scaling decides: subnormal results, overflow.
  for (auto [from, to] : {std::pair{-104.5f, -86.0f}, std::pair{87.0f, 89.5f}}) {
    int64_t worst = 0;
    for (float x = from; x < to;) {
      Floats8 xs;
      for (int l = 0; l < 8; ++l, x = std::nextafter(x, to)) xs[l] = x;
      const Floats8 ys = exp8(xs);
      for (int l = 0; l < 8; ++l) worst = std::max(worst, ulps_apart(ys[l], reference_exp(xs[l])));
    }
    EXPECT_LE(worst, 1) << "in [" << from << ", " << to << ")";
  }
}

TEST(VectorExp, SpecialValuesAreExact) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_one(0.0f), 1.0f);
  EXPECT_EQ(exp_one(-0.0f), 1.0f);
  EXPECT_EQ(exp_one(-inf), 0.0f);
  EXPECT_EQ(exp_one(inf), inf);
  EXPECT_EQ(exp_one(-200.0f), 0.0f);
  EXPECT_EQ(exp_one(100.0f), inf);
  EXPECT_EQ(exp_one(88.8f), inf);  // just past the largest float's log
  EXPECT_TRUE(std::isfinite(exp_one(88.72f)));
  EXPECT_TRUE(std::isnan(exp_one(std::numeric_limits<float>::quiet_NaN())));
}

TEST(VectorExp, EachLaneIsTheSameBitsWhateverItsNeighbours) {
  const Floats8 mixed{-3.5f, 0.25f, 80.0f, -100.0f, 1e-7f, -0.0f, 12.0f, -60.5f};
  const Floats8 together = exp8(mixed);
  for (int l = 0; l < 8; ++l)
    EXPECT_EQ(std::bit_cast<uint32_t>(together[l]), std::bit_cast<uint32_t>(exp_one(mixed[l]))) << "lane " << l;
}

}  // namespace
}  // namespace tandem::cpu
