// The CPU RoPE against a float64 loop, and its table of angles, which each
// thread reuses while the positions and frequencies are equal: a call with
// other positions, other frequencies (another model) or on another thread
// must never see a stale table.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

constexpr int kRopeHeads = 3, kD = 16;

std::vector<float> frequencies(double theta) {
  std::vector<float> f(kD / 2);
  for (int i = 0; i < kD / 2; ++i) f[static_cast<size_t>(i)] = static_cast<float>(std::pow(theta, -2.0 * i / kD));
  return f;
}

// Largest difference between rope(x) and the rotation in float64.
double worst_error(const std::vector<int32_t>& positions, const std::vector<float>& inv_freq, uint32_t seed) {
  const std::vector<float> x = test_support::random_normal(positions.size() * kRopeHeads * kD, seed);
  std::vector<float> y = x;
  cpu::rope(y.data(), positions, kRopeHeads, kD, inv_freq.data());
  double worst = 0;
  for (size_t t = 0; t < positions.size(); ++t)
    for (int h = 0; h < kRopeHeads; ++h)
      for (int i = 0; i < kD / 2; ++i) {
        const size_t a = (t * kRopeHeads + h) * kD + i, b = a + kD / 2;
        const double angle = positions[t] * static_cast<double>(inv_freq[static_cast<size_t>(i)]);
        const double want_a = x[a] * std::cos(angle) - x[b] * std::sin(angle);
        const double want_b = x[b] * std::cos(angle) + x[a] * std::sin(angle);
        worst = std::max({worst, std::abs(y[a] - want_a), std::abs(y[b] - want_b)});
      }
  return worst;
}

TEST(Rope, MatchesFloat64WhenPositionsAndFrequenciesChangeBetweenCalls) {
  const std::vector<float> llama = frequencies(10000.0), other = frequencies(500000.0);
  const std::vector<int32_t> prefill = {0, 1, 2, 3, 4, 5, 6, 7}, same_length = {8, 9, 10, 11, 12, 13, 14, 15};
  const std::vector<int32_t> far = {100000, 7, 65535};
  // Each call after the first: the same step again (reuse), then every key changed alone.
  for (const auto& [positions, inv_freq] : {std::pair{prefill, llama}, std::pair{prefill, llama},
                                            std::pair{same_length, llama}, std::pair{same_length, other},
                                            std::pair{far, other}, std::pair{prefill, llama}})
    EXPECT_LT(worst_error(positions, inv_freq, static_cast<uint32_t>(positions[0])), 2e-6);
}

TEST(Rope, EachThreadSeesItsOwnPositions) {
  const std::vector<float> inv_freq = frequencies(10000.0);
  std::vector<double> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      double worst = 0;
      for (int round = 0; round < 50; ++round) {
        const std::vector<int32_t> positions = {i * 1000 + round, i * 1000 + round + 1};
        worst = std::max(worst, worst_error(positions, inv_freq, static_cast<uint32_t>(round)));
      }
      errors[static_cast<size_t>(i)] = worst;
    });
  for (std::thread& t : threads) t.join();
  for (double e : errors) EXPECT_LT(e, 2e-6);
}

}  // namespace
}  // namespace tandem
