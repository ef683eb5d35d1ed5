// The weight dtype conversions (kernels/dtype.h), checked exhaustively over
// every 16-bit pattern: a narrow value survives the round trip through f32
// unchanged, and f32 values between two neighbours round to the nearer, ties
// to the even one, as IEEE 754's default rounding (and PyTorch, and the CUDA
// intrinsics the GPU backend uses) does.
#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace tandem {
namespace {

bool is_nan_bf16(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }
bool is_nan_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// The f32 halfway between two adjacent narrow values: it needs one mantissa
// bit more than the narrow type has, which f32 has, so it is exact.
float midpoint(float a, float b) { return static_cast<float>((static_cast<double>(a) + b) / 2); }

TEST(Dtype, Bf16RoundTripsEveryPattern) {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const float value = bf16_to_f32(bits);
    if (is_nan_bf16(bits)) {
      EXPECT_TRUE(is_nan_bf16(f32_to_bf16(value))) << b;
    } else {
      ASSERT_EQ(f32_to_bf16(value), bits) << b;
    }
  }
}

TEST(Dtype, F16RoundTripsEveryPattern) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float value = f16_to_f32(bits);
    if (is_nan_f16(bits)) {
      EXPECT_TRUE(is_nan_f16(f32_to_f16(value))) << h;
    } else {
      ASSERT_EQ(f32_to_f16(value), bits) << h;
    }
  }
}

// Between each pair of adjacent positive finite values: just below the
// midpoint goes down, just above goes up, the midpoint goes to the even one.
template <typename ToNarrow, typename ToWide>
void check_rounding_between_neighbours(uint16_t largest_finite, ToNarrow to_narrow, ToWide to_wide) {
  for (uint16_t low = 0; low < largest_finite; ++low) {
    const uint16_t high = static_cast<uint16_t>(low + 1);
    const float mid = midpoint(to_wide(low), to_wide(high));
    const uint16_t even = (low & 1u) == 0 ? low : high;
    ASSERT_EQ(to_narrow(mid), even) << "tie between " << low << " and " << high;
    ASSERT_EQ(to_narrow(std::nextafter(mid, 0.0f)), low) << low;
    ASSERT_EQ(to_narrow(std::nextafter(mid, std::numeric_limits<float>::infinity())), high) << low;
    // Negative values mirror positive ones.
    ASSERT_EQ(to_narrow(-mid), static_cast<uint16_t>(even | 0x8000u)) << low;
  }
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  check_rounding_between_neighbours(0x7f7f, f32_to_bf16, bf16_to_f32);
}

TEST(Dtype, F16RoundsToNearestEven) {
  check_rounding_between_neighbours(0x7bff, f32_to_f16, f16_to_f32);
}

TEST(Dtype, OverflowBecomesInfinityAndNanStaysNan) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // 65504 + half an ulp: rounds up to inf
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past bf16's max
  EXPECT_TRUE(is_nan_bf16(f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_nan_f16(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low bits must not turn into inf.
  EXPECT_TRUE(is_nan_bf16(f32_to_bf16(std::bit_cast<float>(0x7f800001u))));
  // Below half the smallest f16 subnormal: zero, sign kept.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -26)), 0x8000);
}

TEST(Dtype, WeightDtypeNamesParse) {
  EXPECT_EQ(parse_weight_dtype("bf16"), Dtype::bf16);
  EXPECT_EQ(parse_weight_dtype("fp16"), Dtype::f16);
  EXPECT_EQ(parse_weight_dtype("fp32"), Dtype::f32);
  EXPECT_FALSE(parse_weight_dtype("int8").has_value());
  const uint16_t narrow[16] = {};
  EXPECT_EQ(WeightView(narrow, Dtype::bf16).offset(10).data, static_cast<const void*>(narrow + 10));
  const float wide[16] = {};
  EXPECT_EQ(WeightView(wide).offset(10).f32(), wide + 10);
  EXPECT_EQ(WeightView(narrow, Dtype::f16).f32(), nullptr);
}

}  // namespace
}  // namespace tandem
