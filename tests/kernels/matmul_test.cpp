// The CPU matmul against OpenBLAS's sgemm (an independent implementation) and
// a float64 loop, and its batch invariance: a row's result must not depend
// on how many rows share the call or where the row sits.
#include <cblas.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/ops.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

// Rows [0, rows) of x times w, each row in a call of its own (the
// one-row path): what every batch must reproduce bit for bit.
std::vector<float> each_row_alone(const std::vector<float>& x, const std::vector<float>& w, int rows, int Kin,
                                  int N) {
  std::vector<float> alone(static_cast<size_t>(rows) * N);
  for (int t = 0; t < rows; ++t)
    cpu::matmul(x.data() + static_cast<size_t>(t) * Kin, w.data(), nullptr, 1, Kin, N,
                alone.data() + static_cast<size_t>(t) * N);
  return alone;
}

struct Shape {
  int T, Kin, N;
};

class MatmulShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(MatmulShapes, MatchesSgemmAndFloat64) {
  const auto [T, Kin, N] = GetParam();
  const auto x = test_support::random_normal(static_cast<size_t>(T) * Kin, 1);
  const auto w = test_support::random_normal(static_cast<size_t>(N) * Kin, 2);
  const auto bias = test_support::random_normal(static_cast<size_t>(N), 3);
  std::vector<float> ours(static_cast<size_t>(T) * N), blas(ours.size());
  cpu::matmul(x.data(), w.data(), bias.data(), T, Kin, N, ours.data());
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, Kin, 1.0f, x.data(), Kin, w.data(),
              Kin, 0.0f, blas.data(), N);
  // Normalized error of a reduction: |ours - exact| / sqrt(Kin) with unit-
  // variance inputs, where fp32 rounding is ~1e-7 per term.
  double worst_exact = 0, worst_blas = 0;
  for (int t = 0; t < T; ++t) {
    for (int n = 0; n < N; ++n) {
      double exact = bias[static_cast<size_t>(n)];
      for (int k = 0; k < Kin; ++k)
        exact += static_cast<double>(x[static_cast<size_t>(t) * Kin + k]) *
                 w[static_cast<size_t>(n) * Kin + k];
      const size_t i = static_cast<size_t>(t) * N + n;
      worst_exact = std::max(worst_exact, std::abs(ours[i] - exact));
      worst_blas = std::max(worst_blas, static_cast<double>(std::abs(ours[i] - (blas[i] + bias[static_cast<size_t>(n)]))));
    }
  }
  EXPECT_LT(worst_exact / std::sqrt(Kin), 1e-5);
  EXPECT_LT(worst_blas / std::sqrt(Kin), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulShapes,
                         ::testing::Values(Shape{1, 64, 8}, Shape{1, 37, 7}, Shape{3, 16, 5},
                                           Shape{7, 100, 13}, Shape{13, 256, 66},
                                           Shape{64, 512, 129}, Shape{130, 48, 9}));

TEST(Matmul, EveryRowIsIndependentOfItsBatch) {
  const int Kin = 200, N = 37, max_T = 25;  // Kin leaves a tail; N a partial block
  const auto x = test_support::random_normal(static_cast<size_t>(max_T) * Kin, 4);
  const auto w = test_support::random_normal(static_cast<size_t>(N) * Kin, 5);
  const std::vector<float> alone = each_row_alone(x, w, max_T, Kin, N);
  for (int T = 1; T <= max_T; ++T) {
    // Rows offset..offset+T-1 in one call must equal each row computed alone.
    for (int offset : {0, max_T - T}) {
      std::vector<float> batch(static_cast<size_t>(T) * N);
      cpu::matmul(x.data() + static_cast<size_t>(offset) * Kin, w.data(), nullptr, T, Kin, N,
                  batch.data());
      EXPECT_EQ(std::memcmp(batch.data(), alone.data() + static_cast<size_t>(offset) * N,
                            batch.size() * sizeof(float)),
                0)
          << "T=" << T << " offset=" << offset;
    }
  }
}

// The many-row path packs x in 16-row panels and w in 6-row panels, lane
// by lane, while one row alone takes the streaming path: every T from 1 to
// 70 at the first, a middle and the last row positions must give each
// row's bits computed alone. Kin 531 leaves a partial 16-lane step; N 37
// and 13 leave a partial w panel; Kin 17 is one full step and one of a
// single lane.
TEST(Matmul, EveryPathAndTileGivesTheBitsOfTheRowAlone) {
  const int max_T = 70;
  for (const auto& [Kin, N] : {std::pair{531, 37}, std::pair{2000, 13}, std::pair{17, 5}}) {
    const auto x = test_support::random_normal(static_cast<size_t>(max_T) * Kin, 7);
    const auto w = test_support::random_normal(static_cast<size_t>(N) * Kin, 8);
    const std::vector<float> alone = each_row_alone(x, w, max_T, Kin, N);
    int mismatches = 0;
    for (int T = 1; T <= max_T; ++T) {
      for (int offset : {0, (max_T - T) / 2, max_T - T}) {
        std::vector<float> batch(static_cast<size_t>(T) * N);
        cpu::matmul(x.data() + static_cast<size_t>(offset) * Kin, w.data(), nullptr, T, Kin, N,
                    batch.data());
        if (std::memcmp(batch.data(), alone.data() + static_cast<size_t>(offset) * N,
                        batch.size() * sizeof(float)) != 0 && ++mismatches <= 5)
          ADD_FAILURE() << "Kin=" << Kin << " N=" << N << " T=" << T << " offset=" << offset;
      }
    }
    EXPECT_EQ(mismatches, 0) << "Kin=" << Kin << " N=" << N;
  }
}

// x panels beyond 4 MiB of packed x take several passes, each packing w
// again: Kin 20000 makes a panel 1.3 MB, so 64 and 70 rows (4 and 5
// panels) are two passes, one of them partial.
TEST(Matmul, SeveralPassesOverXGiveTheBitsOfTheRowAlone) {
  const int Kin = 20000, N = 7, max_T = 70;
  const auto x = test_support::random_normal(static_cast<size_t>(max_T) * Kin, 9);
  const auto w = test_support::random_normal(static_cast<size_t>(N) * Kin, 10);
  const std::vector<float> alone = each_row_alone(x, w, max_T, Kin, N);
  for (int T : {48, 64, 70}) {
    std::vector<float> batch(static_cast<size_t>(T) * N);
    cpu::matmul(x.data(), w.data(), nullptr, T, Kin, N, batch.data());
    EXPECT_EQ(std::memcmp(batch.data(), alone.data(), batch.size() * sizeof(float)), 0) << "T=" << T;
  }
}

TEST(Matmul, NoRowsIsANoOp) {
  const auto w = test_support::random_normal(16, 6);
  float untouched = 42.0f;
  cpu::matmul(nullptr, w.data(), nullptr, 0, 4, 4, &untouched);
  EXPECT_EQ(untouched, 42.0f);
}

}  // namespace
}  // namespace tandem
