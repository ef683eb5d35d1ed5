// The fused residual add + RMSNorm equals, bit for bit, the add and the norm
// run one after the other (the ops LlamaForward checks against NumPy), also
// when its output overwrites y, as the forward pass does.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

class AddRmsnorm : public ::testing::TestWithParam<int> {};

TEST_P(AddRmsnorm, EqualsAddThenRmsnormBitForBit) {
  const int T = 5, C = GetParam();
  const float eps = 1e-5f;
  const auto x = test_support::random_normal(static_cast<size_t>(T) * C, 1, 3.0f);
  const auto y = test_support::random_normal(x.size(), 2, 0.5f);
  const auto weight = test_support::random_normal(static_cast<size_t>(C), 3, 1.0f);

  auto unfused_x = x;
  std::vector<float> unfused_out(x.size());
  cpu::add(unfused_x.data(), y.data(), x.size());
  cpu::rmsnorm(unfused_x.data(), weight.data(), T, C, eps, unfused_out.data());

  auto fused_x = x;
  std::vector<float> fused_out(x.size());
  cpu::add_rmsnorm(fused_x.data(), y.data(), weight.data(), T, C, eps, fused_out.data());
  EXPECT_EQ(fused_x, unfused_x);
  EXPECT_EQ(fused_out, unfused_out);

  // out = y, as in the forward pass (normed_ holds the delta, then the norm).
  auto aliased_x = x;
  auto aliased_y = y;
  cpu::add_rmsnorm(aliased_x.data(), aliased_y.data(), weight.data(), T, C, eps, aliased_y.data());
  EXPECT_EQ(aliased_x, unfused_x);
  EXPECT_EQ(aliased_y, unfused_out);
}

// 64 and 4096: rows too short and long enough for the threads' split.
INSTANTIATE_TEST_SUITE_P(Widths, AddRmsnorm, ::testing::Values(64, 4096));

}  // namespace
}  // namespace tandem
