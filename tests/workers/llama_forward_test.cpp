// LlamaModel against an independent NumPy forward pass.
//
// tests/reference/llama_reference.py writes small random checkpoints (GQA with
// llama3 RoPE scaling in F32; Qwen2 biases with tied embeddings in sharded
// BF16; Qwen3's per-head q/k norms with head_dim 32 over hidden size 64 and
// tied embeddings in F32; Mixtral's and Qwen3-MoE's sparse experts) and a scenario of ragged steps — prefills, multi-token verification
// blocks, single-token decodes, truncations as after a rejected draft — with
// the logits it computes by recomputing every sequence from position 0 in
// float64. Here the same steps run through the paged KV cache in fp32, with
// weight matrices in f32 or bf16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tests/support/reference_files.h"
#include "tests/support/small_model.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

const fs::path& reference_dir() {
  static const ReferenceFiles files("llama_reference.py");
  return files.dir;
}

// max |ours - ref| over a row, relative to the row's largest |ref|.
double row_error(const float* ours, const std::vector<double>& ref) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(ours[i] - ref[i]));
    max_ref = std::max(max_ref, std::abs(ref[i]));
  }
  return max_diff / max_ref;
}

// The backends the reference runs on, and how close each must come:
//   cpu        f32 weights, f32 math: 1e-4 of the row's largest logit (the
//              reference is float64; f32 rounding through a few layers)
//   cpu-bf16   bf16 weight matrices, f32 math: against the reference on the
//              weights the backend holds ("logits_bf16_weights", below), so
//              only f32 rounding differs, as for cpu: the same 1e-4 (the
//              kernels widen bf16 exactly and sum in f32)
//   cuda-f32   the same on the GPU (other summation orders, same precision)
//   cuda-bf16  against the reference computed with the weights the backend
//              holds (an f32 checkpoint's matrices rounded to bf16 as the
//              loader rounds them: "logits_bf16_weights"), so only the
//              arithmetic differs: 2e-2, from perturbation theory of a few
//              random layers, for matmuls that round their input rows to
//              bf16 too (cuBLAS above 64 rows: 2^-9 relative per element;
//              each logit sums thousands of rounded terms whose errors
//              partly cancel). The largest error seen is printed.
struct Mode {
  const char* name;
  BackendKind kind;
  Dtype weights;
  double tolerance;
};
const Mode kModes[] = {{"cpu", BackendKind::cpu, Dtype::f32, 1e-4},
                       {"cpu_bf16", BackendKind::cpu, Dtype::bf16, 1e-4},
                       {"cuda_f32", BackendKind::cuda, Dtype::f32, 1e-4},
                       {"cuda_bf16", BackendKind::cuda, Dtype::bf16, 2e-2}};

class LlamaForward : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(LlamaForward, MatchesNumpyReferenceThroughPagedCache) {
  const auto& [variant, mode] = GetParam();
  if (mode.kind == BackendKind::cuda && cuda_device_count() == 0)
    GTEST_SKIP() << "skipped: no CUDA device";
  ASSERT_FALSE(reference_dir().empty()) << "the NumPy reference script failed (see its output)";
  const fs::path dir = reference_dir() / variant;
  auto backend = make_backend(mode.kind, 0, mode.weights);
  ModelConfig config = load_model_config(dir);
  LlamaWeights weights = load_llama_weights(dir, config, *backend);
  const int V = config.vocab_size;
  // Block size 4 makes every sequence span several non-contiguous blocks.
  PagedKvCache cache(config, /*num_blocks=*/48, /*block_size=*/4, *backend);
  LlamaModel model(config, std::move(weights), *backend);

  std::ifstream file(dir / "scenario.json");
  const nlohmann::json scenario = nlohmann::json::parse(file);
  std::map<std::string, SequenceId> ids;
  int checked_rows = 0;
  double largest_error = 0;
  for (const auto& step : scenario["steps"]) {
    if (step.contains("truncate")) {
      cache.truncate(ids.at(step["truncate"]), step["length"].get<int>());
      continue;
    }
    std::vector<std::vector<int32_t>> tokens;
    std::vector<SequenceStep> steps;
    for (const auto& s : step["sequences"]) tokens.push_back(s["tokens"].get<std::vector<int32_t>>());
    for (size_t i = 0; i < tokens.size(); ++i) {
      const auto& s = step["sequences"][i];
      const std::string name = s["seq"];
      if (!ids.count(name)) ids[name] = cache.create_sequence();
      const SequenceId seq = ids[name];
      ASSERT_TRUE(cache.reserve(seq, cache.length(seq) + static_cast<int>(tokens[i].size())));
      steps.push_back({seq, tokens[i], s["logit_count"].get<int>()});
    }
    const float* logits = model.forward(steps, cache);
    const bool narrowed = mode.weights == Dtype::bf16 && step.contains("logits_bf16_weights");
    const auto& expected = step[narrowed ? "logits_bf16_weights" : "logits"];
    ASSERT_EQ(model.logit_rows(), static_cast<int>(expected.size()));
    std::vector<float> host(expected.size() * V);  // the logits live in backend memory
    backend->download(logits, host);
    for (size_t r = 0; r < expected.size(); ++r) {
      const auto ref = expected[r].get<std::vector<double>>();
      ASSERT_EQ(ref.size(), static_cast<size_t>(V));
      const double error = row_error(host.data() + r * V, ref);
      EXPECT_LT(error, mode.tolerance) << "step row " << r;
      largest_error = std::max(largest_error, error);
      ++checked_rows;
    }
  }
  EXPECT_GT(checked_rows, 30);
  std::printf("%d rows, largest row error %.3g (tolerance %.3g)\n", checked_rows, largest_error,
              mode.tolerance);
}

INSTANTIATE_TEST_SUITE_P(Variants, LlamaForward,
                         ::testing::Combine(::testing::Values("llama_gqa", "qwen2_bias", "qwen3_qk_norm"),
                                            ::testing::ValuesIn(kModes)),
                         [](const ::testing::TestParamInfo<LlamaForward::ParamType>& param) {
                           return std::get<0>(param.param) + "_" + std::get<1>(param.param).name;
                         });

// The sparse MoE variants (Mixtral 8 experts top-2 in sharded BF16,
// Qwen3-MoE 16 experts top-4 with norm_topk_prob in F32) in f32 only: a bf16
// backend's arithmetic moves router logits by more than the reference's
// routing margin (1e-3), so a token could pick other experts and the
// logits differ by far more than any rounding.
INSTANTIATE_TEST_SUITE_P(MoeVariants, LlamaForward,
                         ::testing::Combine(::testing::Values("mixtral_moe", "qwen3_moe"),
                                            ::testing::Values(kModes[0], kModes[2])),  // cpu, cuda_f32
                         [](const ::testing::TestParamInfo<LlamaForward::ParamType>& param) {
                           return std::get<0>(param.param) + "_" + std::get<1>(param.param).name;
                         });

TEST(LlamaForwardErrors, BadStepsAreRejectedWithoutTouchingTheCache) {
  const ModelConfig config = test_support::small_llama(8, 1, 10, 16);
  auto backend = make_cpu_backend();
  PagedKvCache cache(config, 8, 4, *backend);
  LlamaModel model(config, make_dummy_weights(config, 7, *backend), *backend);
  const SequenceId seq = cache.create_sequence();
  ASSERT_TRUE(cache.reserve(seq, 8));
  const std::vector<int32_t> bad_token{3, 10};
  SequenceStep step{seq, bad_token, 1};
  EXPECT_THROW(model.forward(std::span(&step, 1), cache), Error);
  EXPECT_EQ(cache.length(seq), 0);
  const std::vector<int32_t> too_many(9, 1);  // reserved 8
  step.tokens = too_many;
  EXPECT_THROW(model.forward(std::span(&step, 1), cache), Error);
  const std::vector<int32_t> fine{1, 2};
  SequenceStep twice[2] = {{seq, fine, 1}, {seq, fine, 1}};
  EXPECT_THROW(model.forward(twice, cache), Error);
  EXPECT_EQ(cache.length(seq), 0);
}

}  // namespace
}  // namespace tandem
