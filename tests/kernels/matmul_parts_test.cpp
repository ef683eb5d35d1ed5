// Backend::matmul_parts on the CPU backend: the row ranges of one stacked
// matrix (the fused qkv) into separate outputs in one op. Each output must
// hold, bit for bit, what a matmul over its range alone gives, at every
// batch size of the streaming path and past it (the packed path), for f32,
// bf16 and f16 weights, with a bias; no output may be written past its
// rows. The base class's default (one matmul per range) is checked the same
// way, so a backend that does not override it stays right.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/dtype.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using test_support::random_normal;

// Past the last output row, each output carries this many guard floats.
constexpr int kGuard = 5;
constexpr float kGuardValue = -12345.0f;

// The outputs of one matmul_parts call, with their guards.
struct PartsResult {
  std::vector<std::vector<float>> outputs;
};

PartsResult run_parts(Backend& backend, const float* x, WeightView w, const float* bias, int T, int Kin,
                      const std::vector<int>& rows, bool through_base_class) {
  PartsResult result;
  std::vector<MatmulOutput> outputs;
  for (int r : rows) result.outputs.emplace_back(static_cast<size_t>(T) * r + kGuard, kGuardValue);
  for (size_t i = 0; i < rows.size(); ++i) outputs.push_back({rows[i], result.outputs[i].data()});
  if (through_base_class) {
    backend.Backend::matmul_parts(x, w, bias, T, Kin, outputs);
  } else {
    backend.matmul_parts(x, w, bias, T, Kin, outputs);
  }
  return result;
}

class MatmulParts : public ::testing::TestWithParam<Dtype> {};

TEST_P(MatmulParts, EachOutputIsItsRangeAloneBitForBit) {
  const Dtype dtype = GetParam();
  auto backend = make_cpu_backend(dtype);
  const int Kin = 531;  // a partial 16-lane step, two k chunks
  for (const std::vector<int>& rows :
       {std::vector<int>{37, 13, 13}, std::vector<int>{256, 128, 128}, std::vector<int>{1, 2, 3, 4, 5}}) {
    int N = 0;
    for (int r : rows) N += r;
    const auto w_host = random_normal(static_cast<size_t>(N) * Kin, 11);
    const Buffer w = backend->upload_weights(w_host);
    const auto bias = random_normal(static_cast<size_t>(N), 12);
    for (int T : {1, 2, 3, 5, 12, 13, 40}) {
      const auto x = random_normal(static_cast<size_t>(T) * Kin, 13 + static_cast<uint32_t>(T));
      for (bool base : {false, true}) {
        const PartsResult got = run_parts(*backend, x.data(), w.view(), bias.data(), T, Kin, rows, base);
        size_t first_row = 0;
        for (size_t i = 0; i < rows.size(); ++i) {
          const std::string where = std::string(dtype_name(dtype)) + " T=" + std::to_string(T) +
                                    " output " + std::to_string(i) + " of " + std::to_string(rows.size()) +
                                    (base ? " (base class)" : "");
          std::vector<float> alone(static_cast<size_t>(T) * rows[i]);
          backend->matmul(x.data(), w.view().offset(first_row * Kin), bias.data() + first_row, T, Kin, rows[i],
                          alone.data());
          EXPECT_EQ(std::memcmp(got.outputs[i].data(), alone.data(), alone.size() * sizeof(float)), 0) << where;
          for (int g = 0; g < kGuard; ++g)
            EXPECT_EQ(got.outputs[i][alone.size() + static_cast<size_t>(g)], kGuardValue) << where << " guard " << g;
          first_row += static_cast<size_t>(rows[i]);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulParts, ::testing::Values(Dtype::f32, Dtype::bf16, Dtype::f16),
                         [](const auto& param_info) { return std::string(dtype_name(param_info.param)); });

}  // namespace
}  // namespace tandem
