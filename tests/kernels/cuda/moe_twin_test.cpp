// The CUDA MoE ops (Backend::moe_route, moe_combine, and moe_experts() over
// the CUDA backend's ops) against their CPU twins.
//
// The CPU runs on the weights the GPU holds (bf16, rounded on the host), so
// what is compared is the arithmetic. Tolerances, relative to each row's
// largest |value|: 1e-4 where every expert has at most 64 rows (the skinny
// matmul: f32 sums over a few hundred terms in another order, about 1e-6);
// 2e-2 where cuBLAS takes an expert's rows (it rounds its input rows to bf16
// too: the Llama reference's cuda-bf16 tolerance). moe_combine sums top_k
// products per element: within 1e-6 (a fused multiply-add may round once
// less than the CPU's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "tests/support/cuda_twin.h"
#include "tests/support/moe_layer.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using test_support::random_normal;
using testing::to_backend;
using testing::to_host;

std::vector<float> bf16_rounded(std::vector<float> values) {
  for (float& v : values) v = bf16_to_f32(f32_to_bf16(v));
  return values;
}

// max over rows of max |got - want| / max |want|.
double worst_row_error(const std::vector<float>& got, const std::vector<float>& want, int C) {
  double worst = 0;
  for (size_t row = 0; row * C < want.size(); ++row) {
    double diff = 0, scale = 0;
    for (int c = 0; c < C; ++c) {
      diff = std::max(diff, double(std::fabs(got[row * C + c] - want[row * C + c])));
      scale = std::max(scale, double(std::fabs(want[row * C + c])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Rows above which the CUDA backend's matmul hands over to cuBLAS
// (kMaxInvariantRows in kernels/cuda/ops.h; the twins include no CUDA header).
constexpr int cuda_max_invariant_rows = 64;

// Random expert weights, and the layer built on a backend from them (the
// CPU's from their bf16 roundings).
struct Weights {
  testing::MoeShape shape;
  std::vector<float> gate;
  std::vector<std::vector<float>> gate_proj, up_proj, down_proj;
  Weights(testing::MoeShape s, bool rounded) : shape(s) {
    gate = random_normal(size_t(s.E) * s.C, 31, 0.1f);
    for (int e = 0; e < s.E; ++e) {
      auto round = [&](std::vector<float> v) { return rounded ? bf16_rounded(std::move(v)) : v; };
      gate_proj.push_back(round(random_normal(size_t(s.I) * s.C, 400 + e, 0.06f)));
      up_proj.push_back(round(random_normal(size_t(s.I) * s.C, 500 + e, 0.06f)));
      down_proj.push_back(round(random_normal(size_t(s.C) * s.I, 600 + e, 0.08f)));
    }
  }
  testing::MoeLayer on(Backend& backend) const {
    return testing::MoeLayer(backend, shape, gate, gate_proj, up_proj, down_proj);
  }
};

class MoeTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
    cpu_ = make_cpu_backend();
    gpu_ = testing::cuda_backend(Dtype::bf16);
  }
  std::unique_ptr<Backend> cpu_, gpu_;
};

TEST_F(MoeTwin, RouteGivesTheCpusPlan) {
  const int T = 50, E = 16, K = 4;
  const auto logits = random_normal(size_t(T) * E, 32);
  Buffer device = to_backend(*gpu_, logits);
  for (bool norm : {true, false}) {
    MoePlan want, got;
    cpu_->moe_route(logits.data(), T, E, K, norm, want);
    gpu_->moe_route(device.data(), T, E, K, norm, got);
    EXPECT_EQ(got.expert_ids, want.expert_ids);
    EXPECT_EQ(got.weights, want.weights);
    EXPECT_EQ(got.expert_offsets, want.expert_offsets);
    EXPECT_EQ(got.row_tokens, want.row_tokens);
    EXPECT_EQ(got.row_of_choice, want.row_of_choice);
  }
}

TEST_F(MoeTwin, CombineMatchesTheCpu) {
  const int T = 40, E = 8, K = 2, C = 1000;
  const auto logits = random_normal(size_t(T) * E, 33);
  MoePlan plan;
  cpu_->moe_route(logits.data(), T, E, K, true, plan);
  const auto rows = random_normal(size_t(plan.rows()) * C, 34, 2.0f);
  std::vector<float> want(size_t(T) * C);
  cpu_->moe_combine(rows.data(), plan, C, want.data());
  Buffer device_rows = to_backend(*gpu_, rows), out = gpu_->allocate(want.size());
  gpu_->moe_combine(device_rows.data(), plan, C, out.data());
  const auto got = to_host(*gpu_, out.data(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6f + 1e-6f * std::fabs(want[i])) << "element " << i;
}

TEST_F(MoeTwin, LayerMatchesTheCpuOnSkinnyMatmuls) {
  const Weights w({512, 256, 8, 2, true}, /*rounded=*/true);
  const int T = 24;  // at most 48 rows per expert: the skinny matmul
  const auto x = random_normal(size_t(T) * w.shape.C, 35);
  auto cpu_layer = w.on(*cpu_);
  auto gpu_layer = w.on(*gpu_);
  MoePlan cpu_plan, gpu_plan;
  const auto want = cpu_layer.forward(x, cpu_plan);
  const auto got = gpu_layer.forward(x, gpu_plan);
  ASSERT_EQ(gpu_plan.expert_ids, cpu_plan.expert_ids) << "routing differs";
  const double error = worst_row_error(got, want, w.shape.C);
  std::printf("skinny: largest error %.3g of the row's largest value\n", error);
  EXPECT_LE(error, 1e-4);
}

TEST_F(MoeTwin, LayerMatchesTheCpuWhereCublasTakesAnExpert) {
  const Weights w({512, 256, 4, 2, false}, /*rounded=*/true);
  const int T = 300;  // about 150 rows per expert: cuBLAS
  const auto x = random_normal(size_t(T) * w.shape.C, 36);
  auto cpu_layer = w.on(*cpu_);
  auto gpu_layer = w.on(*gpu_);
  MoePlan cpu_plan, gpu_plan;
  const auto want = cpu_layer.forward(x, cpu_plan);
  const auto got = gpu_layer.forward(x, gpu_plan);
  ASSERT_EQ(gpu_plan.expert_ids, cpu_plan.expert_ids) << "routing differs";
  int most_rows = 0;
  for (int e = 0; e < w.shape.E; ++e) most_rows = std::max(most_rows, gpu_plan.expert_rows(e));
  ASSERT_GT(most_rows, cuda_max_invariant_rows) << "no expert reached cuBLAS";
  const double error = worst_row_error(got, want, w.shape.C);
  std::printf("cublas: largest error %.3g of the row's largest value\n", error);
  EXPECT_LE(error, 2e-2);
}

// A token's output alone and in a batch: bit for bit where every expert's
// rows stay on the skinny matmul (default), and at any size with
// set_batch_invariant(true).
TEST_F(MoeTwin, ATokenAloneGivesTheSameBitsAsInABatchSelfCheck) {
  const Weights w({256, 128, 4, 2, true}, /*rounded=*/false);
  for (int T : {24, 200}) {
    gpu_->set_batch_invariant(T > 24);
    auto layer = w.on(*gpu_);
    const int C = w.shape.C;
    const auto x = random_normal(size_t(T) * C, 37);
    MoePlan plan;
    const auto batch = layer.forward(x, plan);
    for (int t : {0, T / 2, T - 1}) {
      MoePlan alone_plan;
      const auto alone =
          layer.forward(std::span<const float>(x).subspan(size_t(t) * C, size_t(C)), alone_plan);
      for (int c = 0; c < C; ++c)
        ASSERT_EQ(alone[c], batch[size_t(t) * C + c]) << T << " tokens, token " << t;
    }
  }
}

}  // namespace
}  // namespace tandem
