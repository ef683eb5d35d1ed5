// Step graphs (Backend::begin_step_graph) change nothing but speed. On a
// CUDA device (skipped without one), against the CPU or closed forms:
// - a replayed graph reads the metadata of the step that launches it, not
//   of the step it was recorded from (RoPE against the CPU's);
// - an op that reads host memory in the middle of a recording sees every op
//   before it done;
// and the device against itself (StepGraphsSelfCheck):
// - a model whose backend records and replays its steps gives, at every
//   step, the logits of the same model launching op by op, bit for bit
//   (the same kernels on the same inputs), through prefills too long to
//   record, batched decodes, verify blocks, truncations after a rejection,
//   contexts crossing KV block boundaries and a sequence joining late; and
//   repeated step shapes really are replayed;
// - a tensor-parallel shard, recorded in segments between its collectives,
//   gives the logits of the same shard launching op by op (two ranks as
//   threads on one GPU, their all-reduces through the host).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "tests/support/cuda_twin.h"
#include "tests/support/forwarding_communicator.h"
#include "tests/support/small_model.h"
#include "tests/support/thread_communicator.h"
#include "workers/llama_weights.h"

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

TEST(StepGraphsSelfCheck, ReplayedStepsGiveTheLogitsOfOpByOpSteps) {
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

// A rank's communicator over device memory for ranks that share one GPU
// (NCCL cannot): each collective copies through the host (with `copier`, a
// CUDA backend of the rank's device, whose copies wait for themselves) and
// the thread group. The model synchronized its backend before calling.
class ThroughHost final : public test_support::ForwardingCommunicator {
 public:
  ThroughHost(Communicator& host, Backend& copier) : ForwardingCommunicator(host), copier_(copier) {}
  void all_reduce_sum(std::span<float> data) override {
    std::vector<float> staged = download(data.data(), data.size());
    inner().all_reduce_sum(staged);
    upload(staged, data.data());
  }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    std::vector<float> out(all.size());
    inner().all_gather(download(mine.data(), mine.size()), out);
    upload(out, all.data());
  }
  void gather(std::span<const float> mine, std::span<float> all, int root) override {
    std::vector<float> out(all.size());
    inner().gather(download(mine.data(), mine.size()), out, root);
    if (!all.empty()) upload(out, all.data());
  }

 private:
  std::vector<float> download(const float* device, size_t n) {
    std::vector<float> host(n);
    copier_.download(device, host);
    return host;
  }
  void upload(const std::vector<float>& host, float* device) { copier_.upload(host, device); }
  Backend& copier_;
};

TEST(StepGraphsSelfCheck, ATensorParallelShardRecordedInSegmentsGivesItsOpByOpLogits) {
  TANDEM_SKIP_WITHOUT_CUDA_DEVICE();
  ModelConfig config = test_support::small_llama(128, 3, 301, 512);  // V odd: uneven vocab blocks
  test_support::run_ranks(2, [&](Communicator& host) {
    auto copier = testing::cuda_backend(Dtype::bf16);
    ThroughHost comm(host, *copier);
    const TensorShard shard{comm.rank(), comm.size(), &comm};
    auto graphed_backend = testing::cuda_backend(Dtype::bf16);
    auto plain_backend = testing::cuda_backend(Dtype::bf16);
    plain_backend->set_step_graphs(false);
    PagedKvCache graphed_cache(config, 64, 4, *graphed_backend, shard);
    PagedKvCache plain_cache(config, 64, 4, *plain_backend, shard);
    LlamaModel graphed(config, make_dummy_weights(config, 5, *graphed_backend, shard),
                       *graphed_backend, shard);
    LlamaModel plain(config, make_dummy_weights(config, 5, *plain_backend, shard),
                     *plain_backend, shard);
    const SequenceId a = graphed_cache.create_sequence();
    ASSERT_EQ(plain_cache.create_sequence(), a);
    std::mt19937 rng(3);  // the same on both ranks: the same tokens
    for (int i = 0; i < 12; ++i) {
      const std::vector<int32_t> tokens = random_tokens(rng, i == 0 ? 6 : 1, config.vocab_size);
      const int length = graphed_cache.length(a) + static_cast<int>(tokens.size());
      ASSERT_TRUE(graphed_cache.reserve(a, length));
      ASSERT_TRUE(plain_cache.reserve(a, length));
      const std::vector<SequenceStep> steps = {{a, tokens, 1}};
      const float* x = graphed.forward(steps, graphed_cache);
      const float* y = plain.forward(steps, plain_cache);
      if (comm.rank() == 0) {
        const size_t n = static_cast<size_t>(config.vocab_size);
        ASSERT_EQ(to_host(*graphed_backend, x, n), to_host(*plain_backend, y, n)) << "step " << i;
      }
    }
    // Decode steps of one shape from the third on: their segments replay.
    EXPECT_GT(graphed_backend->step_graph_stats().replayed, 0);
  });
}

}  // namespace
}  // namespace tandem
