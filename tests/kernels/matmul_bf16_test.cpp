// The CPU backend with bf16 and f16 weights (kernels/cpu/matmul_bf16.cpp,
// embedding.cpp, CpuBackend::upload_weights).
//
// The strongest check: widening a bf16 or f16 weight to f32 is exact and the
// narrow kernel keeps the f32 kernel's order of operations
// (kernels/cpu/matmul_lanes.h), so its every element must equal, bit for
// bit, what cpu::matmul (a separate implementation, itself tested against
// OpenBLAS in matmul_test.cpp) computes on the widened weights. Also: a
// float64 loop on the widened weights, batch invariance at many T, the
// embedding gather, and a whole MoE layer on a bf16 backend against the f32
// backend holding the same rounded weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "kernels/dtype.h"
#include "tests/support/moe_layer.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using test_support::random_normal;

// The narrow bits of w in dtype, and the f32 values they stand for.
struct Narrowed {
  std::vector<uint16_t> bits;
  std::vector<float> widened;
};
Narrowed narrow(const std::vector<float>& w, Dtype dtype) {
  Narrowed out;
  for (float v : w) {
    const uint16_t b = dtype == Dtype::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
    out.bits.push_back(b);
    out.widened.push_back(dtype == Dtype::bf16 ? bf16_to_f32(b) : f16_to_f32(b));
  }
  return out;
}

void narrow_matmul(Dtype dtype, const float* x, const uint16_t* w, const float* bias, int T,
                   int Kin, int N, float* y) {
  if (dtype == Dtype::bf16) {
    cpu::matmul_bf16(x, w, bias, T, Kin, N, y);
  } else {
    cpu::matmul_f16(x, w, bias, T, Kin, N, y);
  }
}

// Weights with some values only f16's subnormals (and bf16's small normals)
// hold, so that widening is exercised beyond the normal range of f16.
std::vector<float> weights(size_t n, uint32_t seed) {
  auto w = random_normal(n, seed);
  for (size_t i = 0; i < n; i += 17) w[i] *= 1e-6f;
  return w;
}

struct Bf16Shape {
  int T, Kin, N;
};

class NarrowMatmul : public ::testing::TestWithParam<std::tuple<Dtype, Bf16Shape>> {};

TEST_P(NarrowMatmul, EqualsTheF32KernelOnWidenedWeightsBitForBit) {
  const auto& [dtype, shape] = GetParam();
  const auto [T, Kin, N] = shape;
  const auto x = random_normal(size_t(T) * Kin, 1);
  const Narrowed w = narrow(weights(size_t(N) * Kin, 2), dtype);
  const auto bias = random_normal(size_t(N), 3);
  std::vector<float> ours(size_t(T) * N), f32(ours.size());
  narrow_matmul(dtype, x.data(), w.bits.data(), bias.data(), T, Kin, N, ours.data());
  cpu::matmul(x.data(), w.widened.data(), bias.data(), T, Kin, N, f32.data());
  ASSERT_EQ(std::memcmp(ours.data(), f32.data(), ours.size() * sizeof(float)), 0);
  // And near the exact sum over the widened weights: fp32 rounding is ~1e-7
  // per term, so |ours - exact| / sqrt(Kin) stays far under 1e-5.
  double worst = 0;
  for (int t = 0; t < T; ++t) {
    for (int n = 0; n < N; ++n) {
      double exact = bias[size_t(n)];
      for (int k = 0; k < Kin; ++k)
        exact += double(x[size_t(t) * Kin + k]) * w.widened[size_t(n) * Kin + k];
      worst = std::max(worst, std::abs(ours[size_t(t) * N + n] - exact));
    }
  }
  EXPECT_LT(worst / std::sqrt(Kin), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NarrowMatmul,
    ::testing::Combine(::testing::Values(Dtype::bf16, Dtype::f16),
                       ::testing::Values(Bf16Shape{1, 64, 8}, Bf16Shape{1, 37, 7}, Bf16Shape{3, 16, 5},
                                         Bf16Shape{7, 100, 13}, Bf16Shape{13, 256, 66},
                                         Bf16Shape{64, 512, 129}, Bf16Shape{130, 48, 9},
                                         Bf16Shape{1, 512, 1376}, Bf16Shape{6, 1376, 512})),
    [](const auto& param) {
      const Bf16Shape s = std::get<1>(param.param);
      return std::string(std::get<0>(param.param) == Dtype::bf16 ? "bf16" : "f16") + "_T" +
             std::to_string(s.T) + "_K" + std::to_string(s.Kin) + "_N" + std::to_string(s.N);
    });

class NarrowMatmulBatch : public ::testing::TestWithParam<Dtype> {};

TEST_P(NarrowMatmulBatch, EveryRowIsIndependentOfItsBatch) {
  const Dtype dtype = GetParam();
  const int Kin = 200, N = 37, max_T = 70;  // Kin leaves a tail; N a partial block
  const auto x = random_normal(size_t(max_T) * Kin, 4);
  const Narrowed w = narrow(weights(size_t(N) * Kin, 5), dtype);
  std::vector<float> alone(size_t(max_T) * N);
  for (int t = 0; t < max_T; ++t)
    narrow_matmul(dtype, x.data() + size_t(t) * Kin, w.bits.data(), nullptr, 1, Kin, N,
                  alone.data() + size_t(t) * N);
  // Every T up to 25 (all remainders of the 6-row tile), then sizes that go
  // parallel and span many tiles.
  std::vector<int> sizes;
  for (int T = 1; T <= 25; ++T) sizes.push_back(T);
  for (int T : {31, 48, 64, 69, 70}) sizes.push_back(T);
  for (int T : sizes) {
    for (int offset : {0, max_T - T}) {
      std::vector<float> batch(size_t(T) * N);
      narrow_matmul(dtype, x.data() + size_t(offset) * Kin, w.bits.data(), nullptr, T, Kin, N,
                    batch.data());
      EXPECT_EQ(std::memcmp(batch.data(), alone.data() + size_t(offset) * N,
                            batch.size() * sizeof(float)),
                0)
          << "T=" << T << " offset=" << offset;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NarrowMatmulBatch, ::testing::Values(Dtype::bf16, Dtype::f16),
                         [](const auto& param) {
                           return std::string(param.param == Dtype::bf16 ? "bf16" : "f16");
                         });

TEST(NarrowMatmulEdges, NoRowsIsANoOp) {
  const std::vector<uint16_t> w(16, 0x3f80);  // bf16 1.0
  float untouched = 42.0f;
  cpu::matmul_bf16(nullptr, w.data(), nullptr, 0, 4, 4, &untouched);
  cpu::matmul_f16(nullptr, w.data(), nullptr, 0, 4, 4, &untouched);
  EXPECT_EQ(untouched, 42.0f);
}

class NarrowCpuBackend : public ::testing::TestWithParam<Dtype> {};

TEST_P(NarrowCpuBackend, StoresRoundedWeightsAndReadsThemInMatmulAndEmbedding) {
  const Dtype dtype = GetParam();
  auto narrow_backend = make_cpu_backend(dtype);
  auto f32_backend = make_cpu_backend();
  EXPECT_EQ(narrow_backend->weight_dtype(), dtype);
  const int V = 23, C = 40, T = 5;
  const auto table = weights(size_t(V) * C, 6);
  const Narrowed rounded = narrow(table, dtype);
  const Buffer stored = narrow_backend->upload_weights(table);
  ASSERT_EQ(stored.dtype(), dtype);
  ASSERT_EQ(stored.size(), table.size());
  EXPECT_EQ(std::memcmp(stored.view().data, rounded.bits.data(), table.size() * 2), 0);

  // The gather widens rows exactly; a negative id gives zeros.
  const std::vector<int32_t> ids{4, -1, 22, 0, 4};
  std::vector<float> rows(size_t(T) * C, 7.0f);
  narrow_backend->embedding(ids, stored.view(), C, rows.data());
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < C; ++c) {
      const float want = ids[size_t(t)] < 0 ? 0.0f : rounded.widened[size_t(ids[size_t(t)]) * C + c];
      ASSERT_EQ(rows[size_t(t) * C + c], want) << "row " << t << " column " << c;
    }
  }

  // The tied LM head: the same table as a matmul, equal to the f32 backend
  // holding the rounded values.
  const auto x = random_normal(size_t(T) * C, 7);
  std::vector<float> ours(size_t(T) * V), f32(ours.size());
  narrow_backend->matmul(x.data(), stored.view(), nullptr, T, C, V, ours.data());
  const Buffer f32_table = f32_backend->upload_weights(rounded.widened);
  f32_backend->matmul(x.data(), f32_table.view(), nullptr, T, C, V, f32.data());
  EXPECT_EQ(std::memcmp(ours.data(), f32.data(), ours.size() * sizeof(float)), 0);
}

// A whole MoE layer (router, grouped expert matmuls, SwiGLU, combine) on a
// narrow-weight backend equals the f32 backend given the rounded experts.
TEST_P(NarrowCpuBackend, MoeLayerEqualsTheF32BackendOnRoundedExperts) {
  const Dtype dtype = GetParam();
  const testing::MoeShape shape{48, 32, 6, 2, true};
  const auto gate = random_normal(size_t(shape.E) * shape.C, 8);
  std::vector<std::vector<float>> gate_proj, up_proj, down_proj, gate_r, up_r, down_r;
  for (int e = 0; e < shape.E; ++e) {
    gate_proj.push_back(random_normal(size_t(shape.I) * shape.C, 100 + e, 0.2f));
    up_proj.push_back(random_normal(size_t(shape.I) * shape.C, 200 + e, 0.2f));
    down_proj.push_back(random_normal(size_t(shape.C) * shape.I, 300 + e, 0.2f));
    gate_r.push_back(narrow(gate_proj.back(), dtype).widened);
    up_r.push_back(narrow(up_proj.back(), dtype).widened);
    down_r.push_back(narrow(down_proj.back(), dtype).widened);
  }
  auto narrow_backend = make_cpu_backend(dtype);
  auto f32_backend = make_cpu_backend();
  testing::MoeLayer narrow_layer(*narrow_backend, shape, gate, gate_proj, up_proj, down_proj);
  testing::MoeLayer f32_layer(*f32_backend, shape, gate, gate_r, up_r, down_r);
  const auto x = random_normal(size_t(17) * shape.C, 9);
  MoePlan narrow_plan, f32_plan;
  const auto ours = narrow_layer.forward(x, narrow_plan);
  const auto want = f32_layer.forward(x, f32_plan);
  EXPECT_EQ(narrow_plan.expert_ids, f32_plan.expert_ids);
  ASSERT_EQ(ours.size(), want.size());
  EXPECT_EQ(std::memcmp(ours.data(), want.data(), ours.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NarrowCpuBackend, ::testing::Values(Dtype::bf16, Dtype::f16),
                         [](const auto& param) {
                           return std::string(param.param == Dtype::bf16 ? "bf16" : "f16");
                         });

}  // namespace
}  // namespace tandem
