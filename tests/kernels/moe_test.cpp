// Properties of the MoE ops (kernels/moe.h, kernels/cpu/moe.cpp): routing
// and its grouping per expert, renormalisation, tie order, bad arguments,
// and batch invariance of the whole layer on the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "tests/support/moe_layer.h"
#include "tests/support/test_inputs.h"

namespace tandem {
namespace {

using test_support::random_normal;

// Every choice appears once in the grouping, in its expert's range, with
// tokens ascending within each expert.
void expect_grouped(const MoePlan& plan) {
  const size_t rows = static_cast<size_t>(plan.rows());
  ASSERT_EQ(plan.expert_offsets.size(), static_cast<size_t>(plan.experts) + 1);
  EXPECT_EQ(plan.expert_offsets.front(), 0);
  EXPECT_EQ(static_cast<size_t>(plan.expert_offsets.back()), rows) << "counts sum to T*top_k";
  ASSERT_EQ(plan.row_tokens.size(), rows);
  ASSERT_EQ(plan.row_of_choice.size(), rows);
  std::vector<int> seen(rows, 0);
  for (size_t at = 0; at < rows; ++at) {
    const int32_t row = plan.row_of_choice[at], e = plan.expert_ids[at];
    ASSERT_GE(row, 0);
    ASSERT_LT(static_cast<size_t>(row), rows);
    ++seen[static_cast<size_t>(row)];
    EXPECT_GE(row, plan.expert_offsets[e]) << "choice " << at;
    EXPECT_LT(row, plan.expert_offsets[e + 1]) << "choice " << at;
    EXPECT_EQ(static_cast<size_t>(plan.row_tokens[row]), at / plan.top_k);
  }
  for (size_t r = 0; r < rows; ++r) EXPECT_EQ(seen[r], 1) << "grouped row " << r;
  for (int e = 0; e < plan.experts; ++e)
    for (int r = plan.expert_offsets[e] + 1; r < plan.expert_offsets[e + 1]; ++r)
      EXPECT_LT(plan.row_tokens[r - 1], plan.row_tokens[r]) << "expert " << e;
}

TEST(MoeRoute, GroupsEveryChoiceUnderItsExpert) {
  const int T = 37, E = 8, K = 2;
  const auto logits = random_normal(size_t(T) * E, 11);
  MoePlan plan;
  cpu::moe_route(logits.data(), T, E, K, true, plan);
  expect_grouped(plan);
  for (int t = 0; t < T; ++t)
    EXPECT_NE(plan.expert_ids[size_t(t) * K], plan.expert_ids[size_t(t) * K + 1]) << "token " << t;
}

TEST(MoeRoute, ChoosesTheLargestProbabilitiesInOrder) {
  const int T = 20, E = 16, K = 4;
  const auto logits = random_normal(size_t(T) * E, 12);
  MoePlan plan;
  cpu::moe_route(logits.data(), T, E, K, false, plan);
  for (int t = 0; t < T; ++t) {
    const float* row = logits.data() + size_t(t) * E;
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    double z = 0;
    for (int e = 0; e < E; ++e) z += std::exp(double(row[e]));
    for (int k = 0; k < K; ++k) {
      EXPECT_EQ(plan.expert_ids[size_t(t) * K + k], order[k]) << "token " << t << " slot " << k;
      // Without renormalisation a weight is the full softmax's probability.
      EXPECT_NEAR(plan.weights[size_t(t) * K + k], std::exp(double(row[order[k]])) / z, 1e-6);
    }
  }
}

TEST(MoeRoute, RenormalisedWeightsSumToOneAndOthersDoNot) {
  const int T = 25, E = 16, K = 4;
  const auto logits = random_normal(size_t(T) * E, 13);
  MoePlan norm, raw;
  cpu::moe_route(logits.data(), T, E, K, true, norm);
  cpu::moe_route(logits.data(), T, E, K, false, raw);
  EXPECT_EQ(norm.expert_ids, raw.expert_ids);
  for (int t = 0; t < T; ++t) {
    double sum_norm = 0, sum_raw = 0;
    for (int k = 0; k < K; ++k) {
      sum_norm += norm.weights[size_t(t) * K + k];
      sum_raw += raw.weights[size_t(t) * K + k];
    }
    EXPECT_NEAR(sum_norm, 1.0, 1e-6) << "token " << t;
    EXPECT_LT(sum_raw, 1.0 - 1e-3) << "token " << t << ": 12 of 16 experts left out";
  }
}

TEST(MoeRoute, EqualProbabilitiesGoToTheLowerExpertFirst) {
  // Experts 5, 2 and 6 tie for first, 1 and 3 for fourth.
  const std::vector<float> logits = {0.0f, 0.5f, 2.0f, 0.5f, -1.0f, 2.0f, 2.0f, 0.0f};
  MoePlan plan;
  cpu::moe_route(logits.data(), 1, 8, 4, true, plan);
  EXPECT_EQ(plan.expert_ids, (std::vector<int32_t>{2, 5, 6, 1}));
}

TEST(MoeRoute, RefusesTopKOutsideOneToExperts) {
  const std::vector<float> logits(8, 0.0f);
  MoePlan plan;
  for (int k : {0, 5, -1}) {
    try {
      cpu::moe_route(logits.data(), 2, 4, k, true, plan);
      ADD_FAILURE() << "top_k " << k << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("top_k"), std::string::npos) << e.what();
    }
  }
}

TEST(MoeRoute, NoTokensIsAnEmptyPlan) {
  MoePlan plan;
  cpu::moe_route(nullptr, 0, 4, 2, true, plan);
  EXPECT_EQ(plan.rows(), 0);
  EXPECT_EQ(plan.expert_offsets, std::vector<int32_t>(5, 0));
}

TEST(MoeCombine, SumsEachTokensWeightedRows) {
  // 2 tokens, top 2, C = 3; grouped rows are given by hand.
  MoePlan plan;
  plan.tokens = 2;
  plan.top_k = 2;
  plan.row_of_choice = {3, 0, 1, 2};
  plan.weights = {0.25f, 0.75f, 0.5f, 2.0f};
  const std::vector<float> rows = {1, 2, 3, 10, 20, 30, 100, 200, 300, 4, 8, 12};
  std::vector<float> out(6, -1.0f);
  cpu::moe_combine(rows.data(), plan, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.75f, 3.5f, 5.25f, 205.0f, 410.0f, 615.0f}));
}

// A small layer of random weights.
struct RandomLayer {
  testing::MoeShape shape{32, 40, 8, 2, true};
  std::vector<float> gate = random_normal(size_t(shape.E) * shape.C, 21, 0.3f);
  std::vector<std::vector<float>> gate_proj, up_proj, down_proj;
  RandomLayer() {
    for (int e = 0; e < shape.E; ++e) {
      gate_proj.push_back(random_normal(size_t(shape.I) * shape.C, 100 + e, 0.2f));
      up_proj.push_back(random_normal(size_t(shape.I) * shape.C, 200 + e, 0.2f));
      down_proj.push_back(random_normal(size_t(shape.C) * shape.I, 300 + e, 0.2f));
    }
  }
};

TEST(MoeExperts, ATokenAloneGivesTheSameBitsAsInABatch) {
  RandomLayer w;
  auto backend = make_cpu_backend();
  testing::MoeLayer layer(*backend, w.shape, w.gate, w.gate_proj, w.up_proj, w.down_proj);
  const int T = 29, C = w.shape.C;
  const auto x = random_normal(size_t(T) * C, 22);
  MoePlan plan;
  const auto batch = layer.forward(x, plan);
  for (int t = 0; t < T; ++t) {
    MoePlan alone_plan;
    const auto alone =
        layer.forward(std::span<const float>(x).subspan(size_t(t) * C, size_t(C)), alone_plan);
    for (int c = 0; c < C; ++c)
      ASSERT_EQ(alone[c], batch[size_t(t) * C + c]) << "token " << t << " column " << c;
  }
}

TEST(MoeExperts, LeavesAnExpertNoTokenChoseUnread) {
  RandomLayer w;
  auto backend = make_cpu_backend();
  const int T = 9, C = w.shape.C, I = w.shape.I, E = w.shape.E;
  auto logits = random_normal(size_t(T) * E, 23);
  for (int t = 0; t < T; ++t) logits[size_t(t) * E + 3] = -100.0f;  // nobody picks expert 3
  MoePlan plan;
  backend->moe_route(logits.data(), T, E, 2, true, plan);
  ASSERT_EQ(plan.expert_rows(3), 0);
  std::vector<std::vector<float>> gate_up(E);
  std::vector<MoeExpertWeights> experts(E);
  for (int e = 0; e < E; ++e) {
    if (e == 3) continue;  // null views: reading them would crash
    gate_up[e] = w.gate_proj[e];
    gate_up[e].insert(gate_up[e].end(), w.up_proj[e].begin(), w.up_proj[e].end());
    experts[e] = {WeightView(gate_up[e].data()), WeightView(w.down_proj[e].data())};
  }
  const auto x = random_normal(size_t(T) * C, 24);
  std::vector<float> out(x.size(), 0.0f);
  MoeScratch scratch;
  moe_experts(*backend, x.data(), plan, experts, C, I, scratch, out.data());
  // The layer computed token by token on the host, within 1e-5: the values
  // seen differ in the last bit (the rows are not laid out as the grouped
  // ones; the bit-for-bit property is ATokenAloneGivesTheSameBitsAsInABatch).
  for (int t = 0; t < T; ++t) {
    std::vector<float> want(C, 0.0f);
    for (int k = 0; k < 2; ++k) {
      const int e = plan.expert_ids[size_t(t) * 2 + k];
      std::vector<float> h(2 * size_t(I)), a(I), y(C);
      cpu::matmul(x.data() + size_t(t) * C, gate_up[e].data(), nullptr, 1, C, 2 * I, h.data());
      cpu::swiglu(h.data(), 1, I, a.data());
      cpu::matmul(a.data(), w.down_proj[e].data(), nullptr, 1, I, C, y.data());
      for (int c = 0; c < C; ++c) want[c] += plan.weights[size_t(t) * 2 + k] * y[c];
    }
    for (int c = 0; c < C; ++c) ASSERT_NEAR(out[size_t(t) * C + c], want[c], 1e-5f) << "token " << t;
  }
}

TEST(MoeExperts, RejectsWeightsForAnotherNumberOfExperts) {
  auto backend = make_cpu_backend();
  MoePlan plan;
  const std::vector<float> logits(8, 0.0f);
  cpu::moe_route(logits.data(), 2, 4, 2, true, plan);
  std::vector<MoeExpertWeights> three(3);
  MoeScratch scratch;
  EXPECT_THROW(moe_experts(*backend, nullptr, plan, three, 4, 4, scratch, nullptr), Error);
}

}  // namespace
}  // namespace tandem
