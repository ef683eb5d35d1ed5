// The promise behind placement.weight_dtype auto: a checkpoint stored in
// bf16 (models/tiny) kept in bf16 in memory computes, bit for bit, the
// logits it computes widened to f32 (each weight is widened exactly before
// the same f32 multiply-adds), on every path a step takes: a prefill (the
// packed matmul), decode steps (one row, streamed) and a verification
// block of 5 rows, for both models of the pair.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "tests/support/tiny_models.h"
#include "workers/checkpoint/checkpoint_reader.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"

namespace tandem {
namespace {

// One model of the pair on a CPU backend storing weights in `dtype`.
struct StoredDtypeModel {
  StoredDtypeModel(const std::filesystem::path& dir, Dtype dtype) : backend(make_cpu_backend(dtype)) {
    ModelConfig config = load_model_config(dir);
    LlamaWeights weights = load_llama_weights(dir, config, *backend);
    cache = std::make_unique<PagedKvCache>(config, 64, 16, *backend);
    model = std::make_unique<LlamaModel>(std::move(config), std::move(weights), *backend);
  }
  // The logits of a prefill of `prompt` (its last 4 positions), 8 decode
  // steps and a 5-token block, one after the other, as one vector.
  std::vector<float> logits_of(const std::vector<int32_t>& prompt, const std::vector<int32_t>& next) {
    const int V = model->config().vocab_size;
    const SequenceId seq = cache->create_sequence();
    EXPECT_TRUE(cache->reserve(seq, static_cast<int>(prompt.size() + next.size())));
    std::vector<float> out;
    auto run = [&](std::span<const int32_t> tokens, int rows) {
      SequenceStep step{seq, tokens, rows};
      const float* logits = model->forward(std::span(&step, 1), *cache);
      out.insert(out.end(), logits, logits + static_cast<size_t>(rows) * V);
    };
    run(prompt, 4);
    for (size_t i = 0; i < 8; ++i) run(std::span(next).subspan(i, 1), 1);
    run(std::span(next).subspan(8, 5), 5);
    cache->release(seq);
    return out;
  }
  std::unique_ptr<Backend> backend;
  std::unique_ptr<PagedKvCache> cache;
  std::unique_ptr<LlamaModel> model;
};

TEST(StoredDtypeIdentity, TheTinyPairKeptInBf16ComputesTheLogitsItComputesInF32) {
  const std::vector<std::vector<int32_t>> windows = test_support::held_out_windows();
  ASSERT_GE(windows.size(), 3u);
  for (const std::filesystem::path& dir : {test_support::kTinyTarget, test_support::kTinyDraft}) {
    ASSERT_EQ(CheckpointReader(dir).matrix_dtype(), Dtype::bf16) << dir;
    StoredDtypeModel f32(dir, Dtype::f32), bf16(dir, Dtype::bf16);
    for (size_t w = 0; w < 3; ++w) {
      const std::vector<int32_t>& window = windows[w];
      const std::vector<int32_t> prompt(window.begin(), window.begin() + 100);
      const std::vector<int32_t> next(window.begin() + 100, window.begin() + 113);
      const std::vector<float> wide = f32.logits_of(prompt, next);
      const std::vector<float> narrow = bf16.logits_of(prompt, next);
      ASSERT_EQ(wide.size(), narrow.size());
      EXPECT_EQ(std::memcmp(wide.data(), narrow.data(), wide.size() * sizeof(float)), 0)
          << dir << ", window " << w;
    }
  }
}

}  // namespace
}  // namespace tandem
