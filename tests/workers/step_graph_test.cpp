// Step graphs (Backend::begin_step_graph) change nothing but speed. On a
// CUDA device (skipped without one):
// - a model whose backend records and replays its steps gives, at every
//   step, the logits of the same model launching op by op, bit for bit
//   (the same kernels on the same inputs), through prefills too long to
//   record, batched decodes, verify blocks, truncations after a rejection,
//   contexts crossing KV block boundaries and a sequence joining late; and
//   repeated step shapes really are replayed;
// - a replayed graph reads the metadata of the step that launches it, not
//   of the step it was recorded from;
// - an op that reads host memory in the middle of a recording sees every op
//   before it done.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "tests/support/cuda_twin.h"
#include "tests/support/small_model.h"

namespace tandem {
namespace {

using test_support::RandomModel;
using testing::to_backend;
using testing::to_host;

std::vector<int32_t> random_tokens(std::mt19937& rng, int count, int vocab) {
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t& t : tokens) t = pick(rng);
  return tokens;
}

// Both models run the same steps; each step's logits must be equal.
struct Twins {
  Twins(Backend& recording, Backend& op_by_op, const ModelConfig& config)
      : graphed(recording, config, /*seed=*/7, /*blocks=*/96, /*block_size=*/4),
        plain(op_by_op, config, /*seed=*/7, /*blocks=*/96, /*block_size=*/4) {}
  RandomModel graphed, plain;
  std::vector<SequenceId> seqs;  // the same ids in both caches

  void add_sequence() {
    seqs.push_back(graphed.cache.create_sequence());
    ASSERT_EQ(plain.cache.create_sequence(), seqs.back());
  }
  void truncate(size_t i, int length) {
    graphed.cache.truncate(seqs[i], length);
    plain.cache.truncate(seqs[i], length);
  }
  // tokens[i] for seqs[i] (an empty list leaves it out), logits for the last
  // `logit_count` tokens of each.
  void step(const std::vector<std::vector<int32_t>>& tokens, int logit_count) {
    std::vector<SequenceStep> steps;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].empty()) continue;
      const int length = graphed.cache.length(seqs[i]) + static_cast<int>(tokens[i].size());
      ASSERT_TRUE(graphed.cache.reserve(seqs[i], length));
      ASSERT_TRUE(plain.cache.reserve(seqs[i], length));
      steps.push_back({seqs[i], tokens[i], std::min<int>(logit_count, tokens[i].size())});
    }
    const float* a = graphed.model.forward(steps, graphed.cache);
    const float* b = plain.model.forward(steps, plain.cache);
    const size_t n = static_cast<size_t>(graphed.model.logit_rows()) *
                     graphed.model.config().vocab_size;
    ASSERT_EQ(to_host(graphed.model.backend(), a, n), to_host(plain.model.backend(), b, n))
        << "step " << steps_run;
    ++steps_run;
  }
  int steps_run = 0;
};

TEST(StepGraphs, ReplayedStepsGiveTheLogitsOfOpByOpSteps) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto graphed = testing::cuda_backend(Dtype::bf16);
  auto plain = testing::cuda_backend(Dtype::bf16);
  plain->set_step_graphs(false);
  const ModelConfig config = test_support::small_llama(128, 3, 300, 512);
  Twins twins(*graphed, *plain, config);
  std::mt19937 rng(11);
  const int V = config.vocab_size;

  twins.add_sequence();
  twins.add_sequence();
  twins.step({random_tokens(rng, 70, V), {}}, 1);  // a prefill over 64 rows: cuBLAS, unrecorded
  twins.step({{}, random_tokens(rng, 9, V)}, 1);
  for (int i = 0; i < 60; ++i) {
    if (i == 25) {
      twins.add_sequence();
      twins.step({{}, {}, random_tokens(rng, 3, V)}, 1);
    }
    std::vector<std::vector<int32_t>> tokens(twins.seqs.size());
    for (auto& t : tokens) t = random_tokens(rng, 1, V);  // decode every sequence
    if (i % 6 == 5) tokens[0] = random_tokens(rng, 5, V);  // a verify block of γ = 4
    twins.step(tokens, 5);
    if (i % 6 == 5) {  // two drafts rejected
      twins.truncate(0, twins.graphed.cache.length(twins.seqs[0]) - 2);
    }
  }
  const Backend::StepGraphStats stats = graphed->step_graph_stats();
  EXPECT_GE(stats.captured, 2);  // decode shapes of 2 and 3 sequences at least
  EXPECT_GE(stats.replayed, 30);
  const Backend::StepGraphStats none = plain->step_graph_stats();
  EXPECT_EQ(none.captured + none.replayed + none.eager, 0);
}

TEST(StepGraphs, AReplayReadsTheMetadataOfItsOwnStep) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend(Dtype::bf16);
  auto cpu = make_cpu_backend();
  const int T = 3, heads = 2, D = 8;
  std::vector<float> inv_freq(D / 2);
  for (int i = 0; i < D / 2; ++i) inv_freq[static_cast<size_t>(i)] = 1.0f / (1 + i);
  Buffer device_freq = to_backend(*gpu, inv_freq);
  const std::vector<float> x(static_cast<size_t>(T) * heads * D, 1.0f);
  Buffer device_x = gpu->allocate(x.size());
  // Five steps of one shape (RoPE at other positions each time): the first
  // runs op by op, the second is captured, the rest replay it.
  for (int32_t base = 0; base < 5; ++base) {
    gpu->upload(x, device_x.data());  // before the recording: uploads end one
    const std::vector<int32_t> positions = {base, 10 * base + 1, 100 * base + 2};
    gpu->begin_step_graph();
    gpu->rope(device_x.data(), positions, heads, D, device_freq.data());
    gpu->synchronize();
    auto want = x;
    cpu::rope(want.data(), positions, heads, D, inv_freq.data());
    const auto got = to_host(*gpu, device_x.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << base << ", " << i;
  }
  const Backend::StepGraphStats stats = gpu->step_graph_stats();
  EXPECT_EQ(stats.eager, 1);
  EXPECT_EQ(stats.captured, 1);
  EXPECT_EQ(stats.replayed, 3);
}

TEST(StepGraphs, AHostReadInTheMiddleSeesEveryOpBeforeIt) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  auto gpu = testing::cuda_backend(Dtype::bf16);
  const std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  Buffer dx = to_backend(*gpu, x), dy = to_backend(*gpu, y);
  gpu->begin_step_graph();
  gpu->add(dx.data(), dy.data(), x.size());
  gpu->add(dx.data(), dy.data(), x.size());
  EXPECT_EQ(to_host(*gpu, dx.data(), x.size()), (std::vector<float>{21, 42, 63, 84}));
  gpu->add(dx.data(), dy.data(), x.size());  // after the recording ended: run as called
  gpu->synchronize();
  EXPECT_EQ(to_host(*gpu, dx.data(), x.size()), (std::vector<float>{31, 62, 93, 124}));
}

}  // namespace
}  // namespace tandem
