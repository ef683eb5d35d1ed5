// Tensor parallelism: TP 1, 2 and 4, run as threads over ThreadCommunicator,
// must compute the unsplit model's logits (dense and sparse MoE models) (within the tolerance of
// tests/support/tensor_parallel_scenario.h) and choose its tokens exactly.
// tests/workers/mpi/ runs the same scenarios as MPI processes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "common/tokenizer/tokenizer.h"
#include "tests/support/expect_error.h"
#include "tests/support/small_model.h"
#include "tests/support/tensor_parallel_scenario.h"
#include "tests/support/thread_communicator.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
#include "workers/tensor_parallel.h"
#include "workers/token_sampler.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using test_support::dummy;
using test_support::heads;
using test_support::kTinyTarget;
using test_support::Rank;
using test_support::run_ranks;
using test_support::run_scenario;
using test_support::shard_of;
using test_support::tiny_target;
using test_support::WeightFactory;

std::vector<std::vector<float>> scenario_logits(const ModelConfig& config,
                                                const WeightFactory& make_weights, int tp) {
  std::vector<std::vector<float>> result;
  run_ranks(tp, [&](Communicator& comm) {
    Rank rank(config, make_weights, shard_of(comm));
    auto logits = run_scenario(rank);
    if (comm.rank() == 0) result = std::move(logits);
  });
  return result;
}

void expect_same_logits(const ModelConfig& config, const WeightFactory& make_weights,
                        std::initializer_list<int> tps) {
  Rank unsplit(config, make_weights, TensorShard{});
  const auto expected = run_scenario(unsplit);
  const int V = config.vocab_size;
  for (int tp : tps) {
    const double worst =
        test_support::worst_row_error(scenario_logits(config, make_weights, tp), expected, V);
    EXPECT_LT(worst, 1e-4) << "TP " << tp;
    std::printf("TP %d: worst relative logits error %.3g\n", tp, worst);
  }
}

// ---- split arithmetic --------------------------------------------------------

ShardLayout layout_of(const ModelConfig& config, int rank, int tp) {
  test_support::ThreadGroup group(tp);
  test_support::ThreadCommunicator comm(group, rank);
  return shard_layout(config, {rank, tp, tp > 1 ? &comm : nullptr});
}

TEST(ShardLayout, SplitsHeadsRowsAndVocabulary) {
  const ModelConfig c = heads(8, 4, 96, 37);
  const ShardLayout r1 = layout_of(c, 1, 2);
  EXPECT_EQ(r1.q_heads.begin, 4);
  EXPECT_EQ(r1.q_heads.count, 4);
  EXPECT_EQ(r1.kv_heads.begin, 2);
  EXPECT_EQ(r1.kv_heads.count, 2);
  EXPECT_EQ(r1.intermediate.begin, 48);
  EXPECT_EQ(r1.intermediate.count, 48);
  EXPECT_EQ(r1.vocab_stride, 19);
  EXPECT_EQ(r1.vocab.begin, 19);
  EXPECT_EQ(r1.vocab.count, 18);  // V need not divide
  // K < tp: KV heads replicated over the ranks of their GQA group.
  const ModelConfig g = heads(8, 2, 96, 40);
  for (int r = 0; r < 4; ++r) {
    const ShardLayout l = layout_of(g, r, 4);
    EXPECT_EQ(l.q_heads.begin, 2 * r);
    EXPECT_EQ(l.kv_heads.begin, r / 2) << "rank " << r;
    EXPECT_EQ(l.kv_heads.count, 1);
  }
  // Unsplit: everything.
  const ShardLayout all = shard_layout(c, TensorShard{});
  EXPECT_EQ(all.q_heads.count, 8);
  EXPECT_EQ(all.kv_heads.count, 4);
  EXPECT_EQ(all.vocab.count, 37);
}

TEST(ShardLayout, IncompatibleSizesNameTheNumbers) {
  using test_support::expect_invalid;
  expect_invalid([] { layout_of(heads(8, 4, 96, 40), 0, 3); }, "num_attention_heads 8");
  expect_invalid([] { layout_of(heads(8, 4, 36, 40), 0, 8); }, "intermediate_size 36");
  // A MoE model's experts split like the dense MLP: their width must divide.
  ModelConfig moe = test_support::small_qwen3_moe(64, 2, 64, 64);
  moe.intermediate_size = 34;
  expect_invalid([&] { layout_of(moe, 0, 4); }, "does not divide moe_intermediate_size 34");
  expect_invalid([&] { layout_of(moe, 0, 4); }, "each expert's FFN");
  EXPECT_EQ(layout_of(moe, 1, 2).intermediate.count, 17);
  expect_invalid([] { layout_of(heads(12, 4, 48, 40), 0, 6); }, "num_key_value_heads 4");
  expect_invalid([] { layout_of(heads(12, 6, 48, 40), 0, 4); }, "num_key_value_heads 6");
  expect_invalid([] { shard_layout(heads(8, 4, 96, 40), {0, 2, nullptr}); }, "communicator");
}

TEST(ShardLayout, MismatchedWeightsOrCacheAreRejected) {
  const ModelConfig c = heads(8, 4, 96, 40);
  run_ranks(2, [&](Communicator& comm) {
    auto backend = make_cpu_backend();
    // Unsplit weights under a shard.
    test_support::expect_invalid(
        [&] {
          LlamaModel model(c, make_dummy_weights(c, 1, *backend), *backend, shard_of(comm));
        },
        "tensor shard");
  });
  auto backend = make_cpu_backend();
  LlamaModel model(c, make_dummy_weights(c, 1, *backend), *backend);
  test_support::ThreadGroup group(2);
  test_support::ThreadCommunicator comm(group, 0);
  PagedKvCache shard_cache(c, 4, 4, *backend, shard_of(comm));
  EXPECT_EQ(shard_cache.kv_heads(), 2);
  const SequenceId seq = shard_cache.create_sequence();
  ASSERT_TRUE(shard_cache.reserve(seq, 1));
  const std::vector<int32_t> one{1};
  SequenceStep step{seq, one, 1};
  test_support::expect_invalid([&] { model.forward(std::span(&step, 1), shard_cache); },
                               "KV heads");
}

TEST(ShardLayout, NegativeEmbeddingIdGivesZeroRow) {
  auto backend = make_cpu_backend();
  const std::vector<float> table{1, 2, 3, 4};  // (2, 2)
  std::vector<float> out(6, 9.0f);
  const std::vector<int32_t> ids{1, -1, 0};
  backend->embedding(ids, table.data(), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 4, 0, 0, 1, 2}));
}

// ---- dummy models of every split kind ----------------------------------------

TEST(TensorParallel, DummyWithMoreKvHeadsThanRanks) {
  expect_same_logits(heads(8, 8, 96, 64), dummy(heads(8, 8, 96, 64), 3), {2, 4});
}

TEST(TensorParallel, DummyWithReplicatedKvHeads) {
  expect_same_logits(heads(8, 2, 96, 64), dummy(heads(8, 2, 96, 64), 4), {4, 8});
}

TEST(TensorParallel, DummyWithVocabularyNotDividingTiedAndBiased) {
  ModelConfig c = heads(8, 4, 96, 37);
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  expect_same_logits(c, dummy(c, 5), {2, 4});
}

TEST(TensorParallel, Qwen3QkNormsOnSplitHeads) {
  // Each rank normalizes its own query and key heads with the replicated
  // norms; K 2 is split at TP 2 and replicated at TP 4.
  const ModelConfig c = test_support::qwen3_heads(4, 2, 96, 64);
  expect_same_logits(c, test_support::dummy_with_qk_norms(c, 6), {2, 4});
}

TEST(TensorParallel, MoeExpertsSplitLikeTheDenseMlp) {
  // Router replicated, every expert's I split (Qwen3-MoE's 16 experts of
  // width 32: 16 and 8 per rank; Mixtral's 8 of width 64), one all-reduce.
  for (const ModelConfig& c : {test_support::small_qwen3_moe(64, 2, 64, 64),
                               test_support::small_mixtral(64, 2, 64, 64)}) {
    SCOPED_TRACE(c.architecture);
    expect_same_logits(c, dummy(c, 8), {2, 4});
  }
}

TEST(TensorParallel, MoeGreedyAndSampledDecodingMatchUnsplit) {
  const ModelConfig c = test_support::small_qwen3_moe(64, 2, 64, 128);
  const std::vector<int32_t> prompt{3, 1, 4, 1, 5, 9, 2, 6};
  for (const SamplingParams& params : test_support::greedy_and_sampled(77)) {
    const std::vector<int32_t> expected =
        test_support::decode_unsplit(c, dummy(c, 8), prompt, params, 24);
    ASSERT_EQ(expected.size(), 24u);
    for (int tp : {1, 2, 4}) {
      std::vector<int32_t> got;
      run_ranks(tp, [&](Communicator& comm) {
        auto out = test_support::decode_in_lockstep(comm, c, dummy(c, 8), prompt, params, 24);
        if (comm.rank() == 0) got = out;
      });
      EXPECT_EQ(got, expected) << "TP " << tp << ", temperature " << params.temperature;
    }
  }
}

TEST(TensorParallel, MoeShardsHoldTheirSliceOfEveryExpert) {
  const ModelConfig c = test_support::small_qwen3_moe(64, 2, 64, 64);  // I 32
  auto backend = make_cpu_backend();
  const LlamaWeights whole = make_dummy_weights(c, 9, *backend);
  run_ranks(2, [&](Communicator& comm) {
    auto be = make_cpu_backend();
    const LlamaWeights part = make_dummy_weights(c, 9, *be, shard_of(comm));
    const int r = comm.rank();
    const LlamaLayerWeights& mine = part.layers[1];
    const LlamaLayerWeights& all = whole.layers[1];
    ASSERT_EQ(mine.expert_down.size(), 16u);
    // The router whole on each rank.
    ASSERT_EQ(std::memcmp(mine.router.data(), all.router.data(), 16 * 64 * 4), 0);
    for (size_t e : {size_t{0}, size_t{15}}) {
      // gate_up (2I, C): rows [16r, 16r + 16) of W_gate, then of W_up.
      for (size_t half = 0; half < 2; ++half) {
        ASSERT_EQ(std::memcmp(mine.expert_gate_up[e].data() + half * 16 * 64,
                              all.expert_gate_up[e].data() + (half * 32 + 16 * r) * 64, 16 * 64 * 4),
                  0);
      }
      // down (C, I): columns [16r, 16r + 16).
      for (size_t row = 0; row < 64; ++row) {
        ASSERT_EQ(std::memcmp(mine.expert_down[e].data() + row * 16,
                              all.expert_down[e].data() + row * 32 + 16 * r, 16 * 4),
                  0);
      }
    }
  });
}

TEST(TensorParallel, DummyShardsAreSlicesOfTheUnsplitModel) {
  const ModelConfig c = heads(8, 4, 96, 40);
  auto backend = make_cpu_backend();
  const LlamaWeights whole = make_dummy_weights(c, 9, *backend);
  run_ranks(2, [&](Communicator& comm) {
    auto be = make_cpu_backend();
    const LlamaWeights part = make_dummy_weights(c, 9, *be, shard_of(comm));
    const int r = comm.rank();
    const size_t C = 64;
    // down_proj (C, I): columns [48r, 48r + 48).
    for (size_t row = 0; row < C; ++row) {
      ASSERT_EQ(std::memcmp(part.layers[1].down_proj.data() + row * 48,
                            whole.layers[1].down_proj.data() + row * 96 + 48 * r, 48 * 4),
                0);
    }
    // embed rows [20r, 20r + 20).
    ASSERT_EQ(std::memcmp(part.embed.data(), whole.embed.data() + 20 * r * C, 20 * C * 4), 0);
  });
}

// ---- the tiny trained target ---------------------------------------------------

TEST(TensorParallel, TinyTargetLogitsMatchUnsplit) {
  const ModelConfig config = load_model_config(kTinyTarget);
  expect_same_logits(config, tiny_target(config), {2, 4});
}

// Decodes n tokens after prompt at tp ranks in lockstep: every rank runs the
// same steps; TP rank 0 picks each token (TokenSampler, as plain decoding
// does) and broadcasts it.
std::vector<int32_t> lockstep_decode(const ModelConfig& config, int tp,
                                     const std::vector<int32_t>& prompt,
                                     const SamplingParams& params, int n) {
  std::vector<int32_t> result;
  run_ranks(tp, [&](Communicator& comm) {
    std::vector<int32_t> out =
        test_support::decode_in_lockstep(comm, config, tiny_target(config), prompt, params, n);
    if (comm.rank() == 0) result = out;
  });
  return result;
}

TEST(TensorParallel, TinyTargetGreedyAndSampledDecodingMatchUnsplit) {
  const ModelConfig config = load_model_config(kTinyTarget);
  const Tokenizer tokenizer = Tokenizer::load(kTinyTarget);
  const std::vector<int32_t> prompt = tokenizer.encode("In the morning, the");
  constexpr int kTokens = 40;
  for (const SamplingParams& params : test_support::greedy_and_sampled(1234)) {
    const std::vector<int32_t> expected =
        test_support::decode_unsplit(config, tiny_target(config), prompt, params, kTokens);
    ASSERT_EQ(expected.size(), static_cast<size_t>(kTokens));
    for (int tp : {1, 2, 4}) {
      EXPECT_EQ(lockstep_decode(config, tp, prompt, params, kTokens), expected)
          << "TP " << tp << ", temperature " << params.temperature;
    }
  }
}

TEST(TensorParallel, TinyTargetRanksReadOnlyTheirSlices) {
  const ModelConfig config = load_model_config(kTinyTarget);
  std::map<int, std::vector<int64_t>> bytes;  // tp → bytes read per rank
  std::map<int, std::vector<int64_t>> kv_heads;
  for (int tp : {1, 2, 4}) {
    bytes[tp].resize(static_cast<size_t>(tp));
    kv_heads[tp].resize(static_cast<size_t>(tp));
    run_ranks(tp, [&](Communicator& comm) {
      Rank rank(config, tiny_target(config), shard_of(comm));
      bytes[tp][static_cast<size_t>(comm.rank())] = rank.model->weights().checkpoint_bytes_read;
      kv_heads[tp][static_cast<size_t>(comm.rank())] = rank.cache->kv_heads();
    });
  }
  const int64_t whole = bytes[1][0];
  EXPECT_GT(whole, 15'000'000);  // the bf16 file is 15.8 MB
  std::printf("TP 1 rank 0 read %lld bytes\n", static_cast<long long>(whole));
  for (int tp : {2, 4}) {
    for (int r = 0; r < tp; ++r) {
      const int64_t b = bytes[tp][static_cast<size_t>(r)];
      std::printf("TP %d rank %d read %lld bytes (%.3f of TP 1)\n", tp, r,
                  static_cast<long long>(b), static_cast<double>(b) / whole);
      EXPECT_LT(b, whole * (tp == 2 ? 0.6 : 0.35)) << "TP " << tp << " rank " << r;
      EXPECT_EQ(kv_heads[tp][static_cast<size_t>(r)], 4 / tp);
    }
  }
}

}  // namespace
}  // namespace tandem
