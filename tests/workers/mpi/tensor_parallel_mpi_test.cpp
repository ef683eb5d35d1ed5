// Tensor parallelism across processes: under mpirun with 4 ranks, the
// target split over ranks {0}, {0, 1} and {0, 1, 2, 3} (MPI sub-communicators
// of one job) computes the unsplit model's logits within 1e-4 relative (see
// tests/support/tensor_parallel_scenario.h) and decodes exactly its greedy
// and seeded sampled tokens. Rank 0 holds the unsplit reference and checks;
// the other ranks take part in the groups they belong to.
#include <gtest/gtest.h>

#include <numeric>

#include "common/tokenizer/tokenizer.h"
#include "tests/support/mpi/mpi_world.h"
#include "tests/support/tensor_parallel_scenario.h"

namespace tandem {
namespace {

using test_support::mpi_world;
using test_support::WeightFactory;

// The first tp ranks of the world as a group (every rank must call this).
std::unique_ptr<Communicator> first_ranks(int tp) {
  std::vector<int> ranks(static_cast<size_t>(tp));
  std::iota(ranks.begin(), ranks.end(), 0);
  return mpi_world().split(ranks);
}

void expect_same_logits(const ModelConfig& config, const WeightFactory& make_weights) {
  ASSERT_EQ(mpi_world().size(), 4) << "run under mpirun -np 4";
  std::vector<std::vector<float>> expected;
  if (mpi_world().rank() == 0) {
    test_support::Rank unsplit(config, make_weights, TensorShard{});
    expected = test_support::run_scenario(unsplit);
  }
  for (int tp : {1, 2, 4}) {
    std::unique_ptr<Communicator> group = first_ranks(tp);
    if (!group) continue;
    test_support::Rank rank(config, make_weights, test_support::shard_of(*group));
    const auto got = test_support::run_scenario(rank);
    if (group->rank() != 0) continue;
    const double worst = test_support::worst_row_error(got, expected, config.vocab_size);
    EXPECT_LT(worst, 1e-4) << "TP " << tp;
    std::printf("TP %d over MPI: worst relative logits error %.3g\n", tp, worst);
  }
}

TEST(TensorParallelMpi, TinyTargetLogitsMatchUnsplit) {
  const ModelConfig config = load_model_config(test_support::kTinyTarget);
  expect_same_logits(config, test_support::tiny_target(config));
}

TEST(TensorParallelMpi, DummyWithMoreKvHeadsThanRanks) {
  const ModelConfig config = test_support::heads(8, 8, 96, 64);
  expect_same_logits(config, test_support::dummy(config, 3));
}

TEST(TensorParallelMpi, DummyWithFewerKvHeadsThanRanks) {
  const ModelConfig config = test_support::heads(8, 2, 96, 64);  // replicated at TP 4
  expect_same_logits(config, test_support::dummy(config, 4));
}

TEST(TensorParallelMpi, Qwen3QkNormsOnSplitHeads) {
  const ModelConfig config = test_support::qwen3_heads(4, 2, 96, 64);
  expect_same_logits(config, test_support::dummy_with_qk_norms(config, 6));
}

TEST(TensorParallelMpi, MoeExpertsSplitLikeTheDenseMlp) {
  // Router replicated, every expert's width split: Qwen3-MoE's 16 experts
  // top-4, and Mixtral's 8 top-2.
  for (const ModelConfig& config : {test_support::small_qwen3_moe(64, 2, 64, 64),
                                    test_support::small_mixtral(64, 2, 64, 64)}) {
    SCOPED_TRACE(config.architecture);
    expect_same_logits(config, test_support::dummy(config, 8));
  }
}

TEST(TensorParallelMpi, TinyTargetGreedyAndSeededSamplingMatchUnsplit) {
  const ModelConfig config = load_model_config(test_support::kTinyTarget);
  const std::vector<int32_t> prompt =
      Tokenizer::load(test_support::kTinyTarget).encode("The history of the city");
  constexpr int kTokens = 40;
  for (const SamplingParams& params : test_support::greedy_and_sampled(99)) {
    std::vector<int32_t> expected;
    if (mpi_world().rank() == 0) {
      expected = test_support::decode_unsplit(config, test_support::tiny_target(config), prompt,
                                              params, kTokens);
    }
    for (int tp : {1, 2, 4}) {
      std::unique_ptr<Communicator> group = first_ranks(tp);
      if (!group) continue;
      const std::vector<int32_t> got = test_support::decode_in_lockstep(
          *group, config, test_support::tiny_target(config), prompt, params, kTokens);
      if (group->rank() == 0) {
        EXPECT_EQ(got, expected) << "TP " << tp << ", temperature " << params.temperature;
      }
    }
  }
}

}  // namespace
}  // namespace tandem
