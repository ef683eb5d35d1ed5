// Tests of the Gumbel-max draw (kernels/cpu/gumbel.cpp, the Gumbel contract
// in kernels/philox.h) and of cpu::verify's gumbel coupling
// (kernels/cpu/verify.h), exact ones. The statistical ones (the marginal is p,
// the coupling's acceptance bound) are in gumbel_statistics_test.cpp.
//
// The expected tokens are computed here from philox_exponential alone, in
// another form than gumbel.cpp's loop: the least (E_v / p(v), v) pair over
// the admissible tokens, by std::min_element on pairs, whose lexicographic
// order is the contract's "ties to the lowest v".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/verify.h"
#include "kernels/philox.h"
#include "tests/support/expect_error.h"

namespace tandem::cpu {
namespace {

using test_support::expect_invalid;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The contract's token, independently: argmin over p(v) > 0 (finite) of
// (E_v / double(p(v)), v). -1 when no entry is admissible.
int32_t contract_token(const float* p, int V, uint64_t seed, int64_t position) {
  std::vector<std::pair<double, int32_t>> race;
  for (int v = 0; v < V; ++v) {
    if (p[v] > 0.0f && std::isfinite(p[v])) {
      race.emplace_back(philox_exponential(seed, position, v) / static_cast<double>(p[v]), v);
    }
  }
  if (race.empty()) return -1;
  return std::min_element(race.begin(), race.end())->second;
}

// A random row: Exp(1) weights (some zeroed), normalized or not.
std::vector<float> random_row(int V, std::mt19937& rng, bool with_zeros, double scale = 1.0) {
  std::exponential_distribution<double> weight(1.0);
  std::vector<double> w(V);
  double total = 0.0;
  for (int v = 0; v < V; ++v) {
    w[v] = (with_zeros && rng() % 3 == 0) ? 0.0 : weight(rng);
    total += w[v];
  }
  if (total == 0.0) w[0] = total = 1.0;
  std::vector<float> row(V);
  for (int v = 0; v < V; ++v) row[v] = static_cast<float>(scale * w[v] / total);
  return row;
}

// ---- the clock ---------------------------------------------------------------------

TEST(GumbelClock, IsTheContractsPhiloxUniformThroughLog1p) {
  for (uint64_t seed : {0ull, 1ull, 0x123456789abcdef0ull}) {
    for (int64_t position : {int64_t{0}, int64_t{7}, int64_t{1} << 40}) {
      for (int32_t v : {0, 1, 31999, 262143}) {
        const uint64_t pos = static_cast<uint64_t>(position);
        const PhiloxCounter out = philox4x32_10(
            PhiloxCounter{{static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32), 4u,
                           static_cast<uint32_t>(v)}},
            PhiloxKey{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}});
        const double u = philox_bits_to_uniform(out.w[0], out.w[1]);
        const double e = philox_exponential(seed, position, v);
        EXPECT_EQ(e, -std::log1p(-u)) << seed << " " << position << " " << v;
        EXPECT_GE(e, 0.0);
        EXPECT_LE(e, 37.5);
      }
    }
  }
  // Each token has its own clock, and so does each position.
  EXPECT_NE(philox_exponential(5, 10, 0), philox_exponential(5, 10, 1));
  EXPECT_NE(philox_exponential(5, 10, 0), philox_exponential(5, 11, 0));
  EXPECT_NE(philox_exponential(5, 10, 0), philox_exponential(6, 10, 0));
}

// ---- gumbel_row ----------------------------------------------------------------------

TEST(GumbelRow, IsTheArgminOfClockOverProbability) {
  std::mt19937 rng(41u);
  int draws = 0;
  for (int V : {1, 2, 5, 64, 1000}) {
    for (int r = 0; r < 40; ++r) {
      const std::vector<float> p = random_row(V, rng, /*with_zeros=*/r % 2 == 1);
      for (int64_t position = 0; position < 25; ++position) {
        const uint64_t seed = rng();
        ASSERT_EQ(gumbel_row(p.data(), V, seed, position),
                  contract_token(p.data(), V, seed, position))
            << "V " << V << ", row " << r << ", seed " << seed << ", position " << position;
        ++draws;
      }
    }
  }
  EXPECT_EQ(draws, 5 * 40 * 25);
}

// Probabilities that make tokens a < b tie exactly (E_a / p_a == E_b / p_b
// as doubles), or {0, 0}. Two 53-bit ratios of floats rarely tie: p_a / p_b
// must be within 2^-53 of E_a / E_b, and a ratio of two 24-bit integers is
// that close only near a convergent of E_a / E_b's continued fraction, so
// the convergents h / k (h, k < 2^24, exact as floats) are the candidates.
// About one pair in 30 has one.
std::pair<float, float> tying_probabilities(uint64_t seed, int64_t position, int a, int b) {
  const double ea = philox_exponential(seed, position, a);
  const double eb = philox_exponential(seed, position, b);
  double rest = ea / eb;
  int64_t h = 1, h_before = 0, k = 0, k_before = 1;  // convergents h / k
  for (int term = 0; term < 40; ++term) {
    const double whole = std::floor(rest);
    const int64_t h_next = static_cast<int64_t>(whole) * h + h_before;
    const int64_t k_next = static_cast<int64_t>(whole) * k + k_before;
    if (h_next >= (int64_t{1} << 24) || k_next >= (int64_t{1} << 24)) break;
    h_before = h, h = h_next, k_before = k, k = k_next;
    const float pa = std::ldexp(static_cast<float>(h), -24);
    const float pb = std::ldexp(static_cast<float>(k), -24);
    if (pa > 0.0f && pb > 0.0f && ea / pa == eb / pb) return {pa, pb};
    if (rest == whole) break;
    rest = 1.0 / (rest - whole);
  }
  return {0.0f, 0.0f};
}

TEST(GumbelRow, TiesGoToTheLowestIndex) {
  constexpr uint64_t kSeed = 12345;
  constexpr int64_t kPosition = 77;
  constexpr int V = 64;
  int ties = 0;
  for (int a = 0; a < V; ++a) {
    for (int b = a + 1; b < V; ++b) {
      const auto [pa, pb] = tying_probabilities(kSeed, kPosition, a, b);
      if (pa == 0.0f) continue;
      ++ties;
      ASSERT_EQ(philox_exponential(kSeed, kPosition, a) / static_cast<double>(pa),
                philox_exponential(kSeed, kPosition, b) / static_cast<double>(pb));
      std::vector<float> p(V, 0.0f);
      p[a] = pa;
      p[b] = pb;
      EXPECT_EQ(gumbel_row(p.data(), V, kSeed, kPosition), a) << "tie of " << a << " and " << b;
      EXPECT_EQ(contract_token(p.data(), V, kSeed, kPosition), a);
      // Without token a the other one wins: the tie, not the clock, decided.
      p[a] = 0.0f;
      EXPECT_EQ(gumbel_row(p.data(), V, kSeed, kPosition), b);
    }
  }
  EXPECT_GE(ties, 3);  // 4 with glibc's log1p (2016 pairs)
}

TEST(GumbelRow, ZerosNegativesNaNAndInfinitiesNeverWin) {
  const int V = 9;
  // Tokens 2 and 6 are the only admissible ones; token 4 is tiny but positive.
  const std::vector<float> p = {0.0f, -0.5f, 0.3f, kNaN, 1e-30f, kInf, 0.7f, -kInf, -0.0f};
  int seen[9] = {};
  for (int64_t position = 0; position < 3000; ++position) {
    const int32_t t = gumbel_row(p.data(), V, 99, position);
    ASSERT_TRUE(t == 2 || t == 4 || t == 6) << "position " << position << " drew " << t;
    ++seen[t];
  }
  EXPECT_GT(seen[2], 0);
  EXPECT_GT(seen[6], seen[2]);  // 0.7 against 0.3 over 3000 draws
  // One admissible entry: always it.
  const std::vector<float> single = {0.0f, kNaN, 0.0f, 2.5f, -1.0f};
  for (int64_t position = 0; position < 100; ++position) {
    EXPECT_EQ(gumbel_row(single.data(), 5, 3, position), 3);
  }
  // None: -1.
  const std::vector<float> none = {0.0f, kNaN, -kInf, kInf, -2.0f};
  EXPECT_EQ(gumbel_row(none.data(), 5, 3, 0), -1);
}

TEST(GumbelRow, UnnormalizedRowsDrawTheSameTokens) {
  std::mt19937 rng(7u);
  const int V = 50;
  for (int r = 0; r < 20; ++r) {
    const std::vector<float> p = random_row(V, rng, r % 2 == 0);
    std::vector<std::vector<float>> scaled;
    for (float factor : {0.25f, 8.0f, 0x1p-60f, 0x1p40f}) {  // powers of two: exact
      scaled.push_back(p);
      for (float& x : scaled.back()) x *= factor;
    }
    for (int64_t position = 0; position < 200; ++position) {
      const uint64_t seed = 500u + static_cast<uint64_t>(r);
      const int32_t want = gumbel_row(p.data(), V, seed, position);
      for (const auto& row : scaled) {
        ASSERT_EQ(gumbel_row(row.data(), V, seed, position), want) << "row " << r;
      }
    }
  }
  // Unnormalized weights against their normalized row: equal whenever the
  // scaling keeps the order of the ratios, which it does here (no near ties
  // in these rows; a power of two above keeps it always).
  const std::vector<float> weights = {3.0f, 0.0f, 1.0f, 6.0f, 2.0f, 5.0f};
  std::vector<float> normalized(weights.size());
  for (size_t v = 0; v < weights.size(); ++v) normalized[v] = weights[v] / 17.0f;
  for (int64_t position = 0; position < 500; ++position) {
    EXPECT_EQ(gumbel_row(weights.data(), 6, 21, position),
              gumbel_row(normalized.data(), 6, 21, position));
  }
}

// ---- sample_gumbel -------------------------------------------------------------------

TEST(SampleGumbel, EachRowDrawsWithItsOwnKey) {
  std::mt19937 rng(5u);
  const int V = 40, rows = 30;
  std::vector<float> probs;
  std::vector<NoiseKey> keys;
  for (int r = 0; r < rows; ++r) {
    const std::vector<float> row = random_row(V, rng, r % 3 == 0);
    probs.insert(probs.end(), row.begin(), row.end());
    keys.push_back({rng(), static_cast<int64_t>(rng() % 100000)});
  }
  std::vector<int32_t> out(rows, -7);
  sample_gumbel(probs.data(), rows, V, keys, out.data());
  for (int r = 0; r < rows; ++r) {
    EXPECT_EQ(out[r], contract_token(probs.data() + r * V, V, keys[r].seed, keys[r].position));
  }
}

TEST(SampleGumbel, BadArgumentsAreNamedAndWriteNothing) {
  const int V = 4;
  const std::vector<float> probs = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f, 0.0f, kNaN, -1.0f};
  const std::vector<NoiseKey> two = {{1, 0}, {1, 1}}, one = {{1, 0}};
  std::vector<int32_t> out(2, -7);
  expect_invalid([&] { sample_gumbel(probs.data(), 2, 0, two, out.data()); }, "V (vocabulary");
  expect_invalid([&] { sample_gumbel(probs.data(), 2, V, one, out.data()); },
                 "1 noise keys for 2 rows");
  // Row 1 has nothing admissible: named, and row 0's token is not written.
  expect_invalid([&] { sample_gumbel(probs.data(), 2, V, two, out.data()); },
                 "probability row 1 has no positive finite mass");
  EXPECT_EQ(out, std::vector<int32_t>(2, -7));
}

}  // namespace
}  // namespace tandem::cpu
