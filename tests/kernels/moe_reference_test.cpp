// The CPU MoE layer (kernels/moe.h) against an independent NumPy float64
// reference written from Hugging Face's MixtralSparseMoeBlock and
// Qwen3MoeSparseMoeBlock (tests/reference/moe_reference.py).
//
// Routing must match exactly (the reference redraws tokens whose k-th and
// (k+1)-th router logits are within 1e-3, so f32 rounding cannot reorder
// them), the routing weights within 1e-6, and the layer's output within 1e-5
// of each row's largest |reference| value: a tenth of the Llama reference's
// tolerance (tests/workers/llama_forward_test.cpp, 1e-4 through a few
// layers), since one layer of f32 sums over at most 96 terms rounds to about
// 1e-6 (4e-7 seen); a dropped renormalisation or a wrong expert is off by
// 1e-1 or more. The largest error seen is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>
#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "tests/support/moe_layer.h"
#include "tests/support/reference_files.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

nlohmann::json load_case(const std::string& name) {
  static const ReferenceFiles files("moe_reference.py");
  if (files.dir.empty()) return nullptr;
  std::ifstream in(files.dir / (name + ".json"));
  return nlohmann::json::parse(in);
}

std::vector<std::vector<float>> matrices(const nlohmann::json& list) {
  std::vector<std::vector<float>> out;
  for (const auto& m : list) out.push_back(m.get<std::vector<float>>());
  return out;
}

class MoeReference : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeReference, CpuLayerMatchesFloat64Reference) {
  const nlohmann::json ref = load_case(GetParam());
  ASSERT_FALSE(ref.is_null()) << "tests/reference/moe_reference.py failed (python3 with numpy?)";
  testing::MoeShape shape;
  shape.C = ref["hidden"];
  shape.I = ref["intermediate"];
  shape.E = ref["experts"];
  shape.top_k = ref["top_k"];
  shape.norm_topk_prob = ref["norm_topk_prob"];
  const int T = ref["tokens"];
  std::printf("%s: %d tokens redrawn to avoid routing near-ties\n", GetParam(),
              ref["redrawn_tokens"].get<int>());

  auto backend = make_cpu_backend();
  testing::MoeLayer layer(*backend, shape, ref["gate"].get<std::vector<float>>(),
                          matrices(ref["gate_proj"]), matrices(ref["up_proj"]),
                          matrices(ref["down_proj"]));
  MoePlan plan;
  const std::vector<float> out = layer.forward(ref["x"].get<std::vector<float>>(), plan);

  const auto want_ids = ref["expert_ids"].get<std::vector<int32_t>>();
  const auto want_weights = ref["weights"].get<std::vector<double>>();
  const auto mistral_weights = ref["mistral_weights"].get<std::vector<double>>();
  ASSERT_EQ(plan.expert_ids, want_ids) << "routing differs from the reference";
  for (size_t i = 0; i < want_weights.size(); ++i) {
    EXPECT_NEAR(plan.weights[i], want_weights[i], 1e-6) << "routing weight " << i;
    // Mistral's softmax over the top-k logits alone gives the same weights
    // wherever they are renormalised.
    if (shape.norm_topk_prob) {
      EXPECT_NEAR(plan.weights[i], mistral_weights[i], 1e-6);
    }
  }

  const auto want = ref["out"].get<std::vector<double>>();
  ASSERT_EQ(out.size(), want.size());
  double worst = 0;
  for (int t = 0; t < T; ++t) {
    double max_diff = 0, max_ref = 0;
    for (int c = 0; c < shape.C; ++c) {
      const size_t i = static_cast<size_t>(t) * shape.C + c;
      max_diff = std::max(max_diff, std::abs(out[i] - want[i]));
      max_ref = std::max(max_ref, std::abs(want[i]));
    }
    EXPECT_LE(max_diff / max_ref, 1e-5) << "token " << t;
    worst = std::max(worst, max_diff / max_ref);
  }
  std::printf("%s: largest error %.3g of the row's largest value\n", GetParam(), worst);
}

INSTANTIATE_TEST_SUITE_P(Variants, MoeReference,
                         ::testing::Values("mixtral_top2_of_8", "qwen3moe_top4_of_16_norm",
                                           "qwen3moe_top4_of_16_no_norm"));

}  // namespace
}  // namespace tandem
